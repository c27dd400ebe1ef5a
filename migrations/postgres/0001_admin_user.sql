-- PostgreSQL twin of migrations/sqlite/0001: the same table, in PostgreSQL's words. Kept in
-- step with the SQLite folder by the test `database::both_migration_folders_build_the_same_schema`.
-- Every text column compares byte by byte (collate "C"), as SQLite's do, so times stored as
-- fixed-width text order as time does and names sort the same on both databases.
-- Usernames compare without case: the unique index is on lower(username).
create table admin_user (
    id bigserial primary key,
    username text collate "C" not null,
    password_hash text collate "C" not null,
    session_epoch bigint not null default 0,
    last_login_at text collate "C",
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
create unique index admin_user_username on admin_user (lower(username));
