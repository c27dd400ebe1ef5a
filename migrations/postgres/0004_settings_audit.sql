-- PostgreSQL twin of migrations/sqlite/0004.
create table settings_audit (
    id bigserial primary key,
    actor text collate "C" not null,
    setting text collate "C" not null,
    provider text collate "C",
    action text collate "C" not null,
    changed_keys text collate "C" not null check (changed_keys::jsonb is not null),
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
create index settings_audit_created_at on settings_audit (created_at);
