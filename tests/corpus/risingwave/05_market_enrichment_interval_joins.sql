-- source: risingwavelabs/awesome-stream-processing:02-simple-demos/capital_markets/market_data_enrichment/bootstrap.sql, commit 9857e1f7f3b49a05dbe54412522057a6d40323a9
-- modeled on: DROP SOURCE IF EXISTS before each Kafka JSON source, two MVs with AVG/stddev_samp OVER (PARTITION BY ... ORDER BY ts RANGE BETWEEN INTERVAL '3 seconds' PRECEDING AND CURRENT ROW) and ::NUMERIC rounding, then a four-way chain of interval joins (key = key AND ts BETWEEN other.ts - INTERVAL AND other.ts + INTERVAL) over the source and those MVs
-- dialect: risingwave
-- check: ok
DROP SOURCE IF EXISTS fx_ticks;
CREATE SOURCE fx_ticks (
  pair_id      INT,
  timestamp    TIMESTAMPTZ,
  rate         DOUBLE,
  lots         INT,
  bid_rate     DOUBLE,
  ask_rate     DOUBLE
) WITH (
  connector                   = 'kafka',
  topic                       = 'fx_ticks',
  properties.bootstrap.server = 'broker:9092',
  scan.startup.mode           = 'earliest'
) FORMAT PLAIN ENCODE JSON;

DROP SOURCE IF EXISTS pair_context;
CREATE SOURCE pair_context (
  pair_id               INT,
  region                VARCHAR,
  implied_volatility    DOUBLE,
  region_momentum       DOUBLE,
  news_score            DOUBLE,
  timestamp             TIMESTAMPTZ
) WITH (
  connector                   = 'kafka',
  topic                       = 'pair_context',
  properties.bootstrap.server = 'broker:9092',
  scan.startup.mode           = 'earliest'
) FORMAT PLAIN ENCODE JSON;

CREATE MATERIALIZED VIEW rolling_rate_spread AS
SELECT
  pair_id,
  timestamp,
  ROUND(
    AVG(rate) OVER (
      PARTITION BY pair_id
      ORDER BY timestamp
      RANGE BETWEEN INTERVAL '3 seconds' PRECEDING AND CURRENT ROW
    )::NUMERIC, 2
  ) AS mean_rate,
  ROUND(
    AVG(ask_rate - bid_rate) OVER (
      PARTITION BY pair_id
      ORDER BY timestamp
      RANGE BETWEEN INTERVAL '3 seconds' PRECEDING AND CURRENT ROW
    )::NUMERIC, 2
  ) AS spread
FROM fx_ticks;


CREATE MATERIALIZED VIEW rolling_dispersion AS
SELECT
  pair_id,
  timestamp,
  ROUND(
    stddev_samp(rate) OVER (
      PARTITION BY pair_id
      ORDER BY timestamp
      RANGE BETWEEN INTERVAL '3 seconds' PRECEDING AND CURRENT ROW
    )::NUMERIC, 2
  ) AS dispersion
FROM fx_ticks;

CREATE MATERIALIZED VIEW fx_enriched AS
SELECT
  f.pair_id,
  rs.mean_rate,
  (f.rate - rs.mean_rate) / rs.mean_rate * 100 AS rate_move,
  rs.spread,
  rd.dispersion,
  c.region_momentum,
  c.news_score,
  f.timestamp
FROM fx_ticks AS f
JOIN rolling_rate_spread AS rs
  ON f.pair_id = rs.pair_id
 AND f.timestamp BETWEEN rs.timestamp - INTERVAL '3 seconds'
                     AND rs.timestamp + INTERVAL '3 seconds'
JOIN rolling_dispersion AS rd
  ON f.pair_id = rd.pair_id
 AND f.timestamp BETWEEN rd.timestamp - INTERVAL '3 seconds'
                     AND rd.timestamp + INTERVAL '3 seconds'
JOIN pair_context AS c
  ON f.pair_id = c.pair_id
 AND f.timestamp BETWEEN c.timestamp - INTERVAL '3 seconds'
                     AND c.timestamp + INTERVAL '3 seconds';
