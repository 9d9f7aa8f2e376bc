// knex ships its PostgreSQL dialect without types for deep imports.
declare module 'knex/lib/dialects/postgres/index.js' {
  const PgDialect: unknown;
  export default PgDialect;
}
