-- source: risingwavelabs/risingwave-docs:get-started/recipes/stream-enrichment.mdx (https://docs.risingwave.com/get-started/recipes/stream-enrichment), commit 747f1f6bcf3160e0c709631556777cbe96cf18cb
-- modeled on: a Kafka JSON source with WATERMARK FOR ... AS ... - INTERVAL '5 SECONDS', a shared postgres-cdc CREATE SOURCE, CREATE TABLE (... PRIMARY KEY) FROM src TABLE 'public.x', a stream JOIN CDC-table MV, and CREATE SINK ... FROM mv WITH (connector = 'kafka', ...) FORMAT PLAIN ENCODE JSON (force_append_only = 'true')
-- dialect: risingwave
-- check: ok
CREATE SOURCE page_hits (
  account_id VARCHAR,
  path       VARCHAR,
  hit_time   TIMESTAMPTZ,
  WATERMARK FOR hit_time AS hit_time - INTERVAL '5 SECONDS'
) WITH (
  connector = 'kafka',
  topic = 'page_hits',
  properties.bootstrap.server = 'localhost:9092',
  scan.startup.mode = 'earliest'
) FORMAT PLAIN ENCODE JSON;

CREATE SOURCE crm_pg WITH (
  connector = 'postgres-cdc',
  hostname = '127.0.0.1',
  port = '5432',
  username = 'postgres',
  password = 'placeholder',
  database.name = 'crm',
  slot.name = 'rw_page_hits_slot'
);

CREATE TABLE accounts (
  id       VARCHAR PRIMARY KEY,
  tier     VARCHAR,
  country  VARCHAR,
  plan     VARCHAR
) FROM crm_pg TABLE 'public.accounts';

CREATE MATERIALIZED VIEW page_hits_enriched AS
SELECT
  h.account_id,
  h.path,
  h.hit_time,
  a.tier,
  a.country,
  a.plan
FROM page_hits h
JOIN accounts a ON h.account_id = a.id;

CREATE SINK page_hits_enriched_kafka FROM page_hits_enriched
WITH (
  connector = 'kafka',
  properties.bootstrap.server = 'localhost:9092',
  topic = 'page-hits-enriched'
) FORMAT PLAIN ENCODE JSON (force_append_only = 'true');
