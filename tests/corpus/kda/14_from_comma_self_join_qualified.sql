-- source: https://docs.aws.amazon.com/kinesisanalytics/latest/sqlref/sql-reference-from-clause.html (Amazon Kinesis Data Analytics SQL Reference, "FROM clause", section "Correlation names"), page as stored in the search index
-- modeled on: a comma (cartesian) self-join of one three-part-named table (catalog.schema.TABLE), once under its default alias (its own name) and once AS an alias, filtered in WHERE, || concatenation in the select list, no final semicolon
-- dialect: kda
-- check: ok
-- config (the example's table, which the source does not declare):
CREATE TABLE LOCALDB.Staff.WORKERS (WORKERNO INTEGER PRIMARY KEY, NAME VARCHAR(32), LEADNO INTEGER) WITH (connector = 'files', format = 'csv', path = '/data/workers');
-- program:
SELECT WORKERS.NAME || ' reports to ' || LEADS.NAME
FROM LOCALDB.Staff.WORKERS, LOCALDB.Staff.WORKERS AS LEADS
WHERE LEADS.WORKERNO = WORKERS.LEADNO
