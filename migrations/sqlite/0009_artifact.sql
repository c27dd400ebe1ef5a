-- Files a trial run wrote to ./artifacts/, kept for a while so the console can offer them as
-- downloads from its own address (attachment, nosniff, a sandboxing CSP) instead of data:
-- links. Only the latest trial of each admin is kept, and rows expire after an hour.
create table artifact (
    id text primary key,
    admin_user_id integer not null references admin_user (id) on delete cascade,
    name text not null,
    mime_type text not null,
    content blob not null,
    expires_at text not null,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
create index artifact_admin_user_id on artifact (admin_user_id);
create index artifact_expires_at on artifact (expires_at);
