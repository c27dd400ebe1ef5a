-- What a run did on the network under an allow-list (the JSON of its egress report:
-- connections with their verdicts and bytes), kept with the row whatever the content setting:
-- it names hosts, not data. Null for runs without network.
alter table execution add column egress text;
