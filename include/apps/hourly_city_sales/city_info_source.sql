-- The city table's source of truth: `streamjoin snapshot` (and lookup_snapshot_refresh) export it
-- as a new immutable version under CITY_INFO_SNAPSHOTS_PATH, which query.sql reads.
-- Point it at PostgreSQL instead with: WITH (connector = 'postgres', url = '...', table = 'city_info').
CREATE TABLE city_info (
    city VARCHAR(32) PRIMARY KEY,
    region VARCHAR(32),
    store_name VARCHAR(64)
) WITH (connector = 'files', format = 'csv', path = '${CITY_INFO_PATH:-data/hourly_city_sales/city_info}');
