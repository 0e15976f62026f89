-- source: risingwavelabs/awesome-stream-processing:07-iceberg-demos/clickstream_events_api_to_iceberg/README.md (SQL blocks in order, SELECT checks left out), commit 9857e1f7f3b49a05dbe54412522057a6d40323a9
-- modeled on: CREATE CONNECTION (type = 'iceberg'), CREATE TABLE IF NOT EXISTS (some WITH (appendonly = 'true')), CREATE MATERIALIZED VIEW IF NOT EXISTS with a five-way LEFT JOIN chain and with LEFT JOINs under GROUP BY, SET iceberg_engine_connection, an ENGINE = iceberg table and INSERT INTO ... SELECT * FROM the MV
-- dialect: risingwave
-- check: ok
CREATE CONNECTION lake_catalog_conn
WITH (
    type = 'iceberg',
    catalog.type = 'rest',
    catalog.uri = 'http://catalog:8181/catalog/',
    warehouse.path = 'lake-warehouse',
    s3.access.key = 'placeholder',
    s3.secret.key = 'placeholder',
    s3.path.style.access = 'true',
    s3.endpoint = 'http://objectstore:9301',
    s3.region = 'eu-central-1'
);

-- Members
CREATE TABLE IF NOT EXISTS members (
  member_id BIGINT,
  display_name VARCHAR,
  contact VARCHAR,
  nation VARCHAR,
  joined_at TIMESTAMPTZ,
  newsletter BOOLEAN,
  loaded_at TIMESTAMPTZ
);

-- Handsets
CREATE TABLE IF NOT EXISTS handsets (
  handset_id VARCHAR,
  handset_kind VARCHAR,
  platform VARCHAR,
  client VARCHAR,
  agent_string VARCHAR,
  loaded_at TIMESTAMPTZ
);

-- Visits
CREATE TABLE IF NOT EXISTS visits (
  visit_id VARCHAR,
  member_id BIGINT,
  handset_id VARCHAR,
  visit_start TIMESTAMPTZ,
  client_ip VARCHAR,
  city VARCHAR,
  province VARCHAR,
  loaded_at TIMESTAMPTZ
);

-- Promotions
CREATE TABLE IF NOT EXISTS promotions (
  promotion_id VARCHAR,
  origin VARCHAR,
  channel VARCHAR,
  label VARCHAR,
  creative VARCHAR,
  keyword VARCHAR,
  loaded_at TIMESTAMPTZ
) WITH (appendonly = 'true');

-- Screen catalog
CREATE TABLE IF NOT EXISTS screen_catalog (
  screen_url VARCHAR,
  screen_group VARCHAR,
  sku VARCHAR,
  sku_group VARCHAR,
  loaded_at TIMESTAMPTZ
) WITH (appendonly = 'true');

-- Interaction events
CREATE TABLE IF NOT EXISTS interactions (
  interaction_id VARCHAR,
  member_id BIGINT,
  visit_id VARCHAR,
  kind VARCHAR,               -- view/tap/basket_add/checkout/order
  screen_url VARCHAR,
  widget_id VARCHAR,
  happened_at TIMESTAMPTZ,    -- device time
  came_from VARCHAR,
  promotion_id VARCHAR,
  amount_eur DOUBLE PRECISION,
  loaded_at TIMESTAMPTZ       -- arrival time
);

CREATE MATERIALIZED VIEW IF NOT EXISTS interactions_wide_mv AS
SELECT
  i.interaction_id,
  i.happened_at,
  i.loaded_at,
  i.kind,

  i.member_id,
  m.display_name,
  m.nation,
  m.newsletter,

  v.visit_id,
  v.visit_start,
  v.city,
  v.province,

  h.handset_kind,
  h.platform,
  h.client,

  i.screen_url,
  s.screen_group,
  s.sku,
  s.sku_group,

  i.widget_id,
  i.came_from,

  p.origin AS promotion_origin,
  p.channel AS promotion_channel,
  p.label AS promotion_label,
  p.creative AS promotion_creative,
  p.keyword AS promotion_keyword,

  i.amount_eur
FROM interactions i
LEFT JOIN members m        ON i.member_id = m.member_id
LEFT JOIN visits v         ON i.visit_id = v.visit_id
LEFT JOIN handsets h       ON v.handset_id = h.handset_id
LEFT JOIN screen_catalog s ON i.screen_url = s.screen_url
LEFT JOIN promotions p     ON i.promotion_id = p.promotion_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS visit_kpi_mv AS
SELECT
  v.visit_id,
  v.member_id,
  m.nation,
  h.handset_kind,

  MIN(i.happened_at) AS first_interaction,
  MAX(i.happened_at) AS last_interaction,
  EXTRACT(EPOCH FROM (MAX(i.happened_at) - MIN(i.happened_at)))::BIGINT AS visit_seconds,

  SUM(CASE WHEN i.kind = 'view' THEN 1 ELSE 0 END) AS views,
  SUM(CASE WHEN i.kind = 'tap' THEN 1 ELSE 0 END) AS taps,
  SUM(CASE WHEN i.kind = 'basket_add' THEN 1 ELSE 0 END) AS basket_adds,
  SUM(CASE WHEN i.kind = 'checkout' THEN 1 ELSE 0 END) AS checkouts,
  SUM(CASE WHEN i.kind = 'order' THEN 1 ELSE 0 END) AS orders,

  COALESCE(SUM(i.amount_eur), 0) AS amount_eur,

  CASE WHEN SUM(CASE WHEN i.kind='basket_add' THEN 1 ELSE 0 END) > 0 THEN TRUE ELSE FALSE END AS added_to_basket,
  CASE WHEN SUM(CASE WHEN i.kind='order' THEN 1 ELSE 0 END) > 0 THEN TRUE ELSE FALSE END AS ordered
FROM visits v
LEFT JOIN interactions i ON i.visit_id = v.visit_id
LEFT JOIN members m      ON v.member_id = m.member_id
LEFT JOIN handsets h     ON v.handset_id = h.handset_id
GROUP BY
  v.visit_id, v.member_id, m.nation, h.handset_kind;

-- Use the connection
SET iceberg_engine_connection = 'public.lake_catalog_conn';

CREATE TABLE IF NOT EXISTS interactions_wide_iceberg (
  interaction_id VARCHAR,
  happened_at TIMESTAMPTZ,
  loaded_at TIMESTAMPTZ,
  kind VARCHAR,

  member_id BIGINT,
  display_name VARCHAR,
  nation VARCHAR,
  newsletter BOOLEAN,

  visit_id VARCHAR,
  visit_start TIMESTAMPTZ,
  city VARCHAR,
  province VARCHAR,

  handset_kind VARCHAR,
  platform VARCHAR,
  client VARCHAR,

  screen_url VARCHAR,
  screen_group VARCHAR,
  sku VARCHAR,
  sku_group VARCHAR,

  widget_id VARCHAR,
  came_from VARCHAR,

  promotion_origin VARCHAR,
  promotion_channel VARCHAR,
  promotion_label VARCHAR,
  promotion_creative VARCHAR,
  promotion_keyword VARCHAR,

  amount_eur DOUBLE PRECISION
)
WITH (commit_checkpoint_interval = 1)
ENGINE = iceberg;

INSERT INTO interactions_wide_iceberg
SELECT * FROM interactions_wide_mv;
