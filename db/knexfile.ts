/** Knex CLI configuration (`npx knex --knexfile db/knexfile.ts migrate:latest`); reads DATABASE_URL. */
import { migrationConfig } from './index';

export default {
  client: 'pg',
  connection: process.env.DATABASE_URL,
  migrations: migrationConfig(),
};
