-- PostgreSQL twin of migrations/sqlite/0009.
create table artifact (
    id text collate "C" primary key,
    admin_user_id bigint not null references admin_user (id) on delete cascade,
    name text collate "C" not null,
    mime_type text collate "C" not null,
    content bytea not null,
    expires_at text collate "C" not null,
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
create index artifact_admin_user_id on artifact (admin_user_id);
create index artifact_expires_at on artifact (expires_at);
