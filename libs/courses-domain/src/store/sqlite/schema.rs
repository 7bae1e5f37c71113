//! [`schema_differences`]: how a SQLite file's schema differs from the one this version's
//! migrations make (issue 24, item 3; ADR 0041, amended).
//!
//! A file is only as trustworthy as its schema: a trigger planted in a backup rewrote every
//! acknowledged "7 horas" as 1 once restored, another deleted history, a dropped unique index let
//! two active courses share a title. The migrations table says which migrations ran, not what the
//! file holds, so the file's `sqlite_master` (tables, indexes, triggers, views, each with its SQL)
//! is compared with that of a scratch database migrated in memory by this binary's migrations.
//! SQLite's own objects (`sqlite_sequence`, `sqlite_stat1`, automatic indexes) are not compared.

use std::fmt;
use std::sync::OnceLock;

use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};
use diesel::sqlite::SqliteConnection;
use diesel_migrations::MigrationHarness as _;

use crate::store::sqlite::MIGRATIONS;

/// One way a file's schema differs from this version's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaDifference {
    /// An object the migrations do not make (a trigger, an index, a table, a view).
    Extra {
        /// `table`, `index`, `trigger` or `view`.
        kind: String,
        /// Its name.
        name: String,
    },
    /// An object the migrations make that the file lacks (a dropped index, say).
    Missing {
        /// `table`, `index`, `trigger` or `view`.
        kind: String,
        /// Its name.
        name: String,
    },
    /// An object of that name whose definition is not the migrations' one.
    Altered {
        /// `table`, `index`, `trigger` or `view`.
        kind: String,
        /// Its name.
        name: String,
    },
}

impl SchemaDifference {
    /// True when the difference can change what a write stores or refuses without the server
    /// knowing: anything but an extra table, index or view (an operator's own reporting index
    /// or table cannot rewrite a course; a trigger can, and a missing or altered object of ours
    /// breaks a rule the store relies on).
    #[must_use]
    pub(crate) fn can_change_writes(&self) -> bool {
        !matches!(self, Self::Extra { kind, .. } if kind != "trigger")
    }
}

impl fmt::Display for SchemaDifference {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Extra { kind, name } => write!(formatter, "an extra {kind} `{name}`"),
            Self::Missing { kind, name } => write!(formatter, "no {kind} `{name}`"),
            Self::Altered { kind, name } => write!(formatter, "the {kind} `{name}` defined otherwise"),
        }
    }
}

/// The differences as one line: "an extra trigger `x`, no index `y`".
#[must_use]
pub(crate) fn describe(differences: &[SchemaDifference]) -> String {
    differences.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
struct Object {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Nullable<Text>)]
    sql: Option<String>,
}

fn objects(connection: &mut SqliteConnection) -> QueryResult<Vec<Object>> {
    diesel::sql_query(
        "SELECT type AS kind, name, sql FROM sqlite_master
         WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name",
    )
    .load(connection)
}

/// The objects this version's migrations make, read once from a scratch database in memory.
fn expected() -> QueryResult<&'static [Object]> {
    static EXPECTED: OnceLock<Vec<Object>> = OnceLock::new();
    if let Some(objects) = EXPECTED.get() {
        return Ok(objects);
    }
    let mut scratch = SqliteConnection::establish(":memory:")
        .map_err(|error| diesel::result::Error::QueryBuilderError(Box::new(error)))?;
    scratch.run_pending_migrations(MIGRATIONS).map_err(diesel::result::Error::QueryBuilderError)?;
    let made = objects(&mut scratch)?;
    Ok(EXPECTED.get_or_init(|| made))
}

/// How the schema of the database `connection` is open on differs from the one this version's
/// migrations make, once they have all been applied to it; empty when it is exactly that one.
///
/// # Errors
/// The schema cannot be read (or the scratch database made).
pub(crate) fn schema_differences(connection: &mut SqliteConnection) -> QueryResult<Vec<SchemaDifference>> {
    let expected = expected()?;
    let found = objects(connection)?;
    let key = |object: &Object| (object.kind.clone(), object.name.clone());
    let mut differences = Vec::new();
    for object in &found {
        match expected.iter().find(|made| key(made) == key(object)) {
            None => differences.push(SchemaDifference::Extra { kind: object.kind.clone(), name: object.name.clone() }),
            Some(made) if made.sql != object.sql => {
                differences.push(SchemaDifference::Altered { kind: object.kind.clone(), name: object.name.clone() });
            }
            Some(_) => {}
        }
    }
    for made in expected {
        if !found.iter().any(|object| key(object) == key(made)) {
            differences.push(SchemaDifference::Missing { kind: made.kind.clone(), name: made.name.clone() });
        }
    }
    Ok(differences)
}

#[derive(QueryableByName)]
struct Mismatch {
    #[diesel(sql_type = Text)]
    catalog: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    claimed: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    counted: i64,
}

/// The catalogs whose stored count of active courses (`catalog_counters`, what `total` says) is
/// not the number of active courses the file holds: "`padrao` says 1000000, holds 3".
///
/// # Errors
/// The file cannot be read.
pub(crate) fn counter_mismatches(connection: &mut SqliteConnection) -> QueryResult<Vec<String>> {
    let mismatches: Vec<Mismatch> = diesel::sql_query(
        "SELECT catalog, claimed, counted FROM (
             SELECT c.catalog AS catalog, c.active_courses AS claimed,
                    (SELECT COUNT(*) FROM courses WHERE courses.catalog = c.catalog AND archived = 0) AS counted
             FROM catalog_counters AS c
             UNION ALL
             SELECT courses.catalog, 0, COUNT(*) FROM courses
             WHERE archived = 0 AND courses.catalog NOT IN (SELECT catalog FROM catalog_counters)
             GROUP BY courses.catalog
         ) WHERE claimed <> counted ORDER BY catalog",
    )
    .load(connection)?;
    Ok(mismatches
        .into_iter()
        .map(|mismatch| {
            format!(
                "the catalog `{}` counts {} active courses but holds {}",
                mismatch.catalog, mismatch.claimed, mismatch.counted
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use diesel::connection::SimpleConnection as _;

    use super::*;

    fn migrated() -> SqliteConnection {
        let mut connection = SqliteConnection::establish(":memory:").expect("open");
        connection.run_pending_migrations(MIGRATIONS).expect("migrated");
        connection
    }

    #[test]
    fn a_database_the_migrations_made_has_no_difference_and_each_change_is_named() {
        let mut connection = migrated();
        assert_eq!(schema_differences(&mut connection).expect("read"), []);
        assert_eq!(counter_mismatches(&mut connection).expect("read"), Vec::<String>::new());
        // SQLite's own statistics are not a difference.
        connection.batch_execute("ANALYZE;").expect("analyze");
        assert_eq!(schema_differences(&mut connection).expect("read"), []);

        connection
            .batch_execute(
                "CREATE TRIGGER um_hora AFTER INSERT ON courses BEGIN
                     UPDATE courses SET workload_hours = 1 WHERE id = new.id; END;
                 DROP INDEX courses_active_title_key;
                 CREATE INDEX relatorio ON courses (workload_hours);",
            )
            .expect("tamper");
        let differences = schema_differences(&mut connection).expect("read");
        let named = describe(&differences);
        assert!(named.contains("an extra trigger `um_hora`"), "{named}");
        assert!(named.contains("no index `courses_active_title_key`"), "{named}");
        assert!(named.contains("an extra index `relatorio`"), "{named}");
        let harmful: Vec<String> =
            differences.iter().filter(|difference| difference.can_change_writes()).map(ToString::to_string).collect();
        assert_eq!(harmful.len(), 2, "the trigger and the missing index, not the reporting index: {harmful:?}");
    }

    #[test]
    fn a_counter_that_is_not_the_count_is_named() {
        let mut connection = migrated();
        connection
            .batch_execute(
                "INSERT INTO catalog_counters (catalog, active_courses) VALUES ('padrao', 1000000)
                            ON CONFLICT (catalog) DO UPDATE SET active_courses = 1000000;",
            )
            .expect("tamper");
        assert_eq!(
            counter_mismatches(&mut connection).expect("read"),
            ["the catalog `padrao` counts 1000000 active courses but holds 0"]
        );
    }
}
