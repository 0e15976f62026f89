-- source: http://www.sqlstream.com/Products/productsTechSQLXMPLS.htm ("SQL Examples" page of the SQLstream product site; undated, pre-s-Server 3), first two examples
-- modeled on: the product page's service-level-agreement join: SELECT STREAM * FROM a OVER w JOIN b OVER w ON ... WHERE ... WINDOW w AS (RANGE INTERVAL '1' HOUR PRECEDING) (one named window on both sides, unqualified filter column), then a CREATE VIEW moving average over a named PARTITION BY ... RANGE window; unquoted mixed-case names
-- dialect: sqlstream
-- check: ok
-- declared elsewhere in the original (the page shows only the queries):
CREATE STREAM Bookings (id INTEGER, region VARCHAR(32), amount INTEGER) WITH (connector = 'files', format = 'json', path = '/data/bookings');
CREATE STREAM Pickups (pickupid INTEGER, bookingid INTEGER, depot VARCHAR(16)) WITH (connector = 'files', format = 'json', path = '/data/pickups');
CREATE STREAM AllQuotes (symbol VARCHAR(8), bid DOUBLE) WITH (connector = 'files', format = 'json', path = '/data/quotes');

SELECT STREAM *
    FROM Bookings OVER promise
    JOIN Pickups OVER promise
    ON Bookings.id = Pickups.bookingid
    WHERE region = 'Lyon'
    WINDOW promise AS
     (RANGE INTERVAL '1' HOUR PRECEDING)
;

CREATE VIEW tenMinuteMovingAverage AS SELECT STREAM
  symbol, bid,
    AVG(bid) OVER last10mins AS ma10mins FROM AllQuotes
WINDOW last10mins AS
  ( PARTITION BY symbol 
      RANGE INTERVAL '10' MINUTE PRECEDING );
