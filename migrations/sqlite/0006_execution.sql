-- One row per execution, whoever asked (trial run, test connection, REST, /run, CLI): the
-- history admins browse. Code and output are not stored here, only their hash and sizes.
create table execution (
    id integer primary key autoincrement,
    caller text not null,
    caller_kind text not null,
    source text not null,
    provider text not null,
    language text not null,
    status text not null,
    exit_code integer,
    duration_ms integer not null,
    code_sha256 text not null,
    input_bytes integer not null,
    output_bytes integer not null,
    error text,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
create index execution_created_at on execution (created_at);
