-- Idempotent creations: a retried `criar_curso` with the same key and arguments returns the course
-- it created the first time. Written in the same transaction as the course itself, under the
-- creation lock, so two concurrent retries of one key cannot both find it unused.
CREATE TABLE course_creations (
    idempotency_key TEXT PRIMARY KEY,
    -- What was asked for (title and hours): the same key with other arguments is refused.
    fingerprint TEXT NOT NULL,
    course_id TEXT COLLATE "C" NOT NULL REFERENCES courses (id),
    created_at TIMESTAMPTZ NOT NULL
);
