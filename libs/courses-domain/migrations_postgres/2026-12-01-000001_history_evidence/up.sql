-- The evidence of a history entry (ADR 0037), written in the same transaction as the entry: the
-- protocol revision and the client the request declared (NULL when it declared none), the hash of
-- the capability surface the caller was offered, and an archiving's approval receipt. An entry
-- written before this table existed has no row here: its evidence reads back as "not recorded",
-- never invented. (A table of its own: course_history is at diesel's 16-column limit.)
CREATE TABLE course_history_evidence (
    seq BIGINT PRIMARY KEY REFERENCES course_history (seq),
    protocol_revision TEXT,
    client_name TEXT,
    client_version TEXT,
    surface_hash TEXT NOT NULL,
    -- 'asked' (question, shown version, answer and when, all set) or 'not_asked' (archived under
    -- UNCONFIRMED_ARCHIVE=allow); NULL, with the four after it, for a write that is no archiving.
    approval TEXT CHECK (approval IN ('asked', 'not_asked')),
    approval_question TEXT,
    approval_shown_version BIGINT,
    approval_answer TEXT,
    approval_answered_at TIMESTAMPTZ,
    CHECK ((approval = 'asked') = (approval_question IS NOT NULL AND approval_shown_version IS NOT NULL
        AND approval_answer IS NOT NULL AND approval_answered_at IS NOT NULL))
);
