-- Idempotent creations: a retried `criar_curso` with the same key and arguments returns the course
-- it created the first time. Written in the same transaction as the course itself.
CREATE TABLE course_creations (
    idempotency_key TEXT PRIMARY KEY NOT NULL,
    -- What was asked for (title and hours): the same key with other arguments is refused.
    fingerprint TEXT NOT NULL,
    course_id TEXT NOT NULL REFERENCES courses (id),
    created_at TEXT NOT NULL
);
