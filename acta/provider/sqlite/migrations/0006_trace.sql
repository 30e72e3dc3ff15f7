-- acta ledger, SQLite, migration 6: the trace context a job was enqueued under.
--
-- When the enqueuing code runs inside a recording OpenTelemetry span, the enqueue stores that
-- span's W3C trace context (the traceparent header, and tracestate when there is one, as a small
-- JSON object) so the worker's execution span can point back to it. NULL otherwise: a ledger
-- that nobody traces never writes this column.

ALTER TABLE {schema}.jobs ADD COLUMN trace_context TEXT;
