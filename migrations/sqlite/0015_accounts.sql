-- Accounts in the console: a generated first-start (or reset) password must be changed at
-- the next sign-in; an administrator can be disabled (not deleted: the audit names them); each
-- admin's theme and language choices (auto follows the browser).
alter table admin_user add column must_change_password integer not null default 0;
alter table admin_user add column disabled_at text;
alter table admin_user add column theme text not null default 'auto';
alter table admin_user add column locale text not null default 'auto';
-- Each signed-in browser, so an admin can see theirs and sign the others out. id is a random
-- token the session remembers; a session whose row is gone is signed out.
create table admin_session (
    id text primary key not null,
    admin_id integer not null references admin_user (id) on delete cascade,
    address text,
    user_agent text,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    last_seen_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
create index admin_session_admin on admin_session (admin_id);
-- API keys may expire, and say where they were last used from.
alter table api_key add column expires_at text;
alter table api_key add column last_used_address text;
