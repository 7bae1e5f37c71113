//! Bound values PostgreSQL's planner plans without looking at (ADR 0064): `(SELECT $n)` there, a
//! plain `?` on SQLite.
//!
//! PostgreSQL plans a prepared statement afresh for its first five runs, then keeps one generic
//! plan only if that plan's estimated cost is no higher than the fresh ones'. For the range steps
//! of a search at a million courses it never is: a fresh plan sees that a rare key's range holds
//! about one row and the `LIMIT`, a generic plan assumes 0.5% of the table and a tenth of it, so
//! the statement was planned again at every call (60–80 µs each, the part of a search that grew
//! with the catalog besides the trigram index). A value behind `(SELECT $n)` is an InitPlan's
//! output, which neither plan can see: both estimate alike, the generic plan wins from the sixth
//! run on, and the index condition is the same (`id >= $0 AND id < $1` on the partial index).

use diesel::expression::{Expression, ValidGrouping, is_aggregate};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Text};
use diesel::sqlite::Sqlite;

/// A text value bound to the statement and hidden from PostgreSQL's planner (see the module).
#[derive(Debug, Clone, QueryId)]
pub(crate) struct OpaqueText(pub(crate) String);

impl Expression for OpaqueText {
    type SqlType = Text;
}

impl<GroupBy> ValidGrouping<GroupBy> for OpaqueText {
    type IsAggregate = is_aggregate::Never;
}

impl<QuerySource> AppearsOnTable<QuerySource> for OpaqueText {}

impl<QuerySource> SelectableExpression<QuerySource> for OpaqueText {}

impl QueryFragment<Sqlite> for OpaqueText {
    fn walk_ast<'query>(&'query self, mut out: AstPass<'_, 'query, Sqlite>) -> QueryResult<()> {
        out.push_bind_param::<Text, _>(&self.0)
    }
}

impl QueryFragment<Pg> for OpaqueText {
    fn walk_ast<'query>(&'query self, mut out: AstPass<'_, 'query, Pg>) -> QueryResult<()> {
        out.push_sql("(SELECT ");
        out.push_bind_param::<Text, _>(&self.0)?;
        out.push_sql(")");
        Ok(())
    }
}

/// `query LIMIT limit`, the limit hidden from PostgreSQL's planner like [`OpaqueText`] (diesel's
/// own `.limit()` binds a plain parameter, which a fresh plan reads). `query` has no `LIMIT` of
/// its own.
#[derive(Debug, Clone, QueryId)]
pub(crate) struct OpaqueLimit<Q> {
    query: Q,
    limit: i64,
}

impl<Q> OpaqueLimit<Q> {
    pub(crate) fn new(query: Q, limit: i64) -> Self {
        Self { query, limit }
    }
}

impl<Q: Query> Query for OpaqueLimit<Q> {
    type SqlType = Q::SqlType;
}

impl<Q, Conn> RunQueryDsl<Conn> for OpaqueLimit<Q> {}

impl<Q: QueryFragment<Sqlite>> QueryFragment<Sqlite> for OpaqueLimit<Q> {
    fn walk_ast<'query>(&'query self, mut out: AstPass<'_, 'query, Sqlite>) -> QueryResult<()> {
        self.query.walk_ast(out.reborrow())?;
        out.push_sql(" LIMIT ");
        out.push_bind_param::<BigInt, _>(&self.limit)
    }
}

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for OpaqueLimit<Q> {
    fn walk_ast<'query>(&'query self, mut out: AstPass<'_, 'query, Pg>) -> QueryResult<()> {
        self.query.walk_ast(out.reborrow())?;
        out.push_sql(" LIMIT (SELECT ");
        out.push_bind_param::<BigInt, _>(&self.limit)?;
        out.push_sql(")");
        Ok(())
    }
}
