-- Administrators who may sign in to the console.
-- Usernames compare without case so "Admin" and "admin" can never be two accounts.
-- session_epoch is bumped on each password reset: a session remembers the epoch it was made
-- under, so resetting a password signs that admin out everywhere.
create table admin_user (
    id integer primary key autoincrement,
    username text not null unique collate nocase,
    password_hash text not null,
    session_epoch integer not null default 0,
    last_login_at text,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
