-- source: risingwavelabs/risingwave-docs:processing/maintain-wide-table-with-table-sinks.mdx, commit 747f1f6bcf3160e0c709631556777cbe96cf18cb
-- modeled on: a fact table and three dimension tables feeding one wide table through CREATE SINK ... INTO t (cols) AS SELECT ... JOIN ... WITH (type = 'append-only', force_append_only = 'true'); keeps ON CONFLICT DO UPDATE IF NOT NULL and /* */ comments
-- dialect: risingwave
-- check: ok
CREATE TABLE parcel(pk int primary key, carrier_ref int, depot_ref int, lane_ref int);
CREATE TABLE carrier(pk int primary key, v int);
CREATE TABLE depot(pk int primary key, v int);
CREATE TABLE lane(pk int primary key, v int);

CREATE TABLE parcel_wide(pk int primary key, carrier_v int, depot_v int, lane_v int)
  ON CONFLICT DO UPDATE IF NOT NULL;

/* The main sink decides which rows the wide table holds. */
CREATE SINK parcel_sink INTO parcel_wide (pk) AS
  SELECT pk FROM parcel;

/* Dimension sinks are forced append-only so that a DELETE does not reach the wide table. */
CREATE SINK carrier_sink INTO parcel_wide (pk, carrier_v) AS
  SELECT parcel.pk, carrier.v
  FROM parcel JOIN carrier ON parcel.carrier_ref = carrier.pk
  WITH (
    type = 'append-only',
    force_append_only = 'true'
  );

CREATE SINK depot_sink INTO parcel_wide (pk, depot_v) AS
  SELECT parcel.pk, depot.v
  FROM parcel JOIN depot ON parcel.depot_ref = depot.pk
  WITH (
    type = 'append-only',
    force_append_only = 'true'
  );

CREATE SINK lane_sink INTO parcel_wide (pk, lane_v) AS
  SELECT parcel.pk, lane.v
  FROM parcel JOIN lane ON parcel.lane_ref = lane.pk
  WITH (
    type = 'append-only',
    force_append_only = 'true'
  );
