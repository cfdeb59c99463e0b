-- The service's own database and role, beside Temporal's (created on the first start of the volume).
CREATE ROLE acp LOGIN PASSWORD 'acp';
CREATE DATABASE acp OWNER acp;
-- pgvector for knowledge retrieval (docs/knowledge.md "Vector storage"): created here, as the superuser, because the
-- extension is not trusted; the service's migration finds it installed and adds the vector column.
\connect acp
CREATE EXTENSION IF NOT EXISTS vector;
