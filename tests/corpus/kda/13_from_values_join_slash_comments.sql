-- source: https://docs.aws.amazon.com/kinesisanalytics/latest/sqlref/sql-reference-from-clause.html (Amazon Kinesis Data Analytics SQL Reference, "FROM clause", section "Relations", second subquery example), page as stored in the search index
-- modeled on: a non-streaming SELECT * joining a table to a VALUES table constructor with a correlation column list (AS e (col, col)), ON equality, preceded by "//" comment lines as the reference writes them
-- dialect: kda
-- check: ok
-- config (the example's table, which the source does not declare):
CREATE TABLE Region (regionno INTEGER PRIMARY KEY, label VARCHAR(16)) WITH (connector = 'files', format = 'csv', path = '/data/regions');
-- program:
// a VALUES list used as a subquery,
// joined to an ordinary table
SELECT * FROM Region AS r
  JOIN (VALUES ('Oslo', 7), ('Lima', 9)) AS c (city, regionno)
  ON r.regionno = c.regionno;
