-- PostgreSQL twin of migrations/sqlite/0015.
alter table admin_user add column must_change_password bigint not null default 0;
alter table admin_user add column disabled_at text collate "C";
alter table admin_user add column theme text collate "C" not null default 'auto';
alter table admin_user add column locale text collate "C" not null default 'auto';
create table admin_session (
    id text collate "C" primary key not null,
    admin_id bigint not null references admin_user (id) on delete cascade,
    address text collate "C",
    user_agent text collate "C",
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    last_seen_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
create index admin_session_admin on admin_session (admin_id);
alter table api_key add column expires_at text collate "C";
alter table api_key add column last_used_address text collate "C";
