-- graft state, version 2 (PostgreSQL): the audit log names the caller that
-- sent a call another identity acted for (run_function's authorization
-- argument); tokens set aside by `graft token reset-local` no longer end local
-- mode.
ALTER TABLE audit_log ADD COLUMN sent_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN set_aside BIGINT NOT NULL DEFAULT 0;
