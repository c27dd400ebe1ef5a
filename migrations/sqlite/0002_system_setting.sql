-- Named settings as JSON text, the model RAGFlow's `system_settings` table uses
-- (`sandbox.provider_type`, `sandbox.<provider>`), named in the singular like every table here.
-- version is an optimistic-lock counter: a save names the version it edited, and loses
-- (instead of silently overwriting) when another admin saved in between.
create table system_setting (
    name text primary key not null,
    value text not null check (json_valid(value)),
    version integer not null default 1,
    updated_by text,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
