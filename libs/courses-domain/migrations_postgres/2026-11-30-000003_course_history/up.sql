-- A course's history: one row per accepted write (creation, update, archiving), written in the
-- same transaction as the change, so the history never disagrees with the course.
CREATE TABLE course_history (
    -- Write order, assigned by the database: the history's keyset (newest first). Writes to one
    -- course are serialized by its row lock, so one course's entries commit in this order.
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    course_id TEXT COLLATE "C" NOT NULL REFERENCES courses (id),
    -- Who (an API key's name, or 'stdio'), through which tool, with which arguments (JSON text).
    author TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    -- The course before the write (all NULL for a creation) ...
    before_title TEXT,
    before_workload_hours INTEGER,
    before_archived BOOLEAN,
    before_version BIGINT,
    before_updated_at TIMESTAMPTZ,
    -- ... and after it. after_updated_at is when the write was accepted.
    after_title TEXT NOT NULL,
    after_workload_hours INTEGER NOT NULL,
    after_archived BOOLEAN NOT NULL,
    after_version BIGINT NOT NULL,
    after_updated_at TIMESTAMPTZ NOT NULL,
    CHECK ((before_version IS NULL) = (after_version = 1))
);

-- Serves one course's history, newest first, page after page.
CREATE INDEX course_history_by_course ON course_history (course_id, seq);
