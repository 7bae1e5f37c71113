//! [`CourseStore::search_active`] against a plain scan of the catalog (ADR 0052): on random
//! catalogs, every kind of key (id prefixes, title prefixes, substrings, short keys, keys that
//! match nothing) gives what the rule of ADR 0012 says, on both stores.

use super::{Backend, TestDatabase, by, catalog_named, new_course};
use crate::catalog::Catalog;
use crate::rules::{CatalogName, Course, CourseChanges, CourseId, CourseTitle, PageSize, TitleSearchKey};

on_both_stores! {
    async:
        searches_give_what_a_scan_of_the_catalog_gives,
        a_title_holding_the_keys_trigrams_apart_is_not_found_by_a_substring;
    sync:
}

/// Words that overlap a lot (shared trigrams, hex-looking words, accents, a capital), so that
/// every step of a search has several matches and the limits cut them.
const WORDS: [&str; 12] = ["ab", "ba", "abc", "Rust", "ação", "go", "0a1", "DEF", "é", "x", "cafe", "ab-c"];

/// SplitMix64: a seeded generator, so a failure is reproduced by the same run.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        usize::try_from((mixed ^ (mixed >> 31)) % bound as u64).expect("small")
    }

    fn title(&mut self) -> String {
        let words = 1 + self.below(4);
        (0..words).map(|_| WORDS[self.below(WORDS.len())]).collect::<Vec<_>>().join(" ")
    }
}

/// The search's rule, computed from the catalog's active courses in creation order: ids starting
/// with the key (id order, up to `limit`), then title keys starting with it (key order, up to
/// `limit`), then, for three characters or more, title keys containing it (creation order, up to
/// `2 × limit`); each course once, the first `limit`. Returns the ranked part (the first two
/// steps, cut to `limit`) and every course the third step could add, in creation order.
fn by_scan(active: &[Course], key: &str, limit: usize) -> (Vec<CourseId>, Vec<CourseId>) {
    let mut ids: Vec<&Course> = if key.bytes().all(|byte| byte.is_ascii_hexdigit() || byte == b'-') {
        active.iter().filter(|course| course.id().to_string().starts_with(key)).collect()
    } else {
        Vec::new()
    };
    ids.sort_by_key(|course| course.id().to_string());
    let mut titles: Vec<&Course> =
        active.iter().filter(|course| course.title().comparison_key().starts_with(key)).collect();
    titles.sort_by_key(|course| course.title().comparison_key());
    let mut ranked = Vec::new();
    for course in ids.into_iter().take(limit).chain(titles.into_iter().take(limit)) {
        if !ranked.contains(&course.id()) {
            ranked.push(course.id());
        }
    }
    ranked.truncate(limit);
    let containing = if key.chars().count() >= 3 {
        active
            .iter()
            .filter(|course| course.title().comparison_key().contains(key) && !ranked.contains(&course.id()))
            .map(Course::id)
            .collect()
    } else {
        Vec::new()
    };
    (ranked, containing)
}

/// What a straight reading of the rule gives on SQLite, whose third step is in creation order.
fn expected_in_order(active: &[Course], key: &str, limit: usize) -> Vec<CourseId> {
    let (mut found, _) = by_scan(active, key, limit);
    if found.len() < limit && key.chars().count() >= 3 {
        let ranked = found.clone();
        let containing: Vec<CourseId> =
            active.iter().filter(|course| course.title().comparison_key().contains(key)).map(Course::id).collect();
        for id in containing.into_iter().take(2 * limit) {
            if !found.contains(&id) {
                found.push(id);
            }
        }
        found.truncate(limit);
        assert!(found.starts_with(&ranked));
    }
    found
}

async fn all_active(catalog: &Catalog) -> Vec<Course> {
    let mut courses = Vec::new();
    let mut after = None;
    loop {
        let page = catalog.active_page(after, PageSize::default()).await.expect("page");
        courses.extend(page.courses);
        match page.next {
            Some(next) => after = Some(next),
            None => return courses,
        }
    }
}

/// A key a user might type: a piece of a title or an id (any case), a word, or noise.
fn typed_key(random: &mut Random, active: &[Course], others: &[Course]) -> String {
    let pick = |random: &mut Random, courses: &[Course]| courses[random.below(courses.len())].clone();
    match random.below(6) {
        0 | 1 => {
            let course = pick(random, active);
            let title: Vec<char> = course.title().as_str().chars().collect();
            let start = random.below(title.len());
            let length = 1 + random.below(8);
            let piece: String = title[start..title.len().min(start + length)].iter().collect();
            if random.below(2) == 0 { piece.to_uppercase() } else { piece }
        }
        2 => {
            // An id prefix, of a course of this catalog or of another's.
            let course = if random.below(3) == 0 { pick(random, others) } else { pick(random, active) };
            course.id().to_string()[..1 + random.below(12)].to_owned()
        }
        3 => WORDS[random.below(WORDS.len())].to_owned(),
        4 => random.title(),
        _ => ["zz", "q", "ab ba ab ba ab", "-", "0", "a", "1-"][random.below(7)].to_owned(),
    }
}

async fn searches_give_what_a_scan_of_the_catalog_gives(backend: Backend) {
    let database = TestDatabase::new(backend);
    let catalog = database.open();
    let other = catalog.scoped(&catalog_named("azul"));
    let mut random = Random(0x5ea2_c4ed);
    let mut created = Vec::new();
    for _ in 0..220 {
        // Duplicate titles are refused: the catalog keeps the first.
        if let Ok(course) = catalog.create(new_course(&random.title(), 10), by()).await {
            created.push(course);
        }
        // Another catalog with the same words: never found from this one.
        let _ = other.create(new_course(&random.title(), 10), by()).await;
    }
    for course in created.iter().filter(|_| random.below(6) == 0) {
        catalog.archive(course.id(), by()).await.expect("archived");
    }
    // Renamed courses keep their creation position (PostgreSQL writes a new row version).
    for course in &created {
        if random.below(8) != 0 {
            continue;
        }
        let title = CourseTitle::parse(&random.title()).expect("title");
        let _ =
            catalog.update(course.id(), CourseChanges { title: Some(title), ..CourseChanges::default() }, by()).await;
    }
    let active = all_active(&catalog).await;
    let others = all_active(&other).await;
    assert!(active.len() > 100 && !others.is_empty(), "{} active courses", active.len());

    let store = database.open_store();
    let name = CatalogName::default_catalog();
    let mut checked = 0;
    for round in 0..600 {
        let typed = typed_key(&mut random, &active, &others);
        let Some(key) = TitleSearchKey::of_typed(&typed) else { continue };
        let limit = [1, 2, 3, 5, 10, 101][random.below(6)];
        let found: Vec<CourseId> =
            store.search_active(&name, &key, limit).expect("search").iter().map(Course::id).collect();
        let context = format!("round {round}: {typed:?} (key {:?}), limit {limit}", key.as_str());
        match backend {
            // SQLite's third step follows the trigram index's rowid: creation order, exactly.
            Backend::Sqlite => assert_eq!(found, expected_in_order(&active, key.as_str(), limit), "{context}"),
            // PostgreSQL's third step has no order of its own (a bitmap scan of the trigram
            // index): the ranked part is exact, the rest are distinct courses containing the key.
            Backend::Postgres => {
                let (ranked, containing) = by_scan(&active, key.as_str(), limit);
                assert!(found.starts_with(&ranked), "{context}: {found:?} starts with {ranked:?}");
                let rest = &found[ranked.len()..];
                assert!(rest.iter().all(|id| containing.contains(id)), "{context}");
                let mut distinct = rest.to_vec();
                distinct.sort_by_key(ToString::to_string);
                distinct.dedup();
                assert_eq!(distinct.len(), rest.len(), "{context}");
                if ranked.len() + containing.len() <= limit {
                    let mut all = containing.clone();
                    all.sort_by_key(ToString::to_string);
                    let mut rest = rest.to_vec();
                    rest.sort_by_key(ToString::to_string);
                    assert_eq!(rest, all, "{context}: every course containing the key");
                }
            }
        }
        checked += 1;
    }
    assert!(checked > 500, "{checked} keys checked");
}

/// SQLite asks its trigram index for a cover of the key's trigrams, not for all of them in a row
/// (ADR 0055): a title holding each trigram of that cover, but not the key, passes the index and
/// must still be left out; a title holding the key is found, wherever the key sits in it. (Keys
/// of letters past `f`: no id prefix can match them.)
async fn a_title_holding_the_keys_trigrams_apart_is_not_found_by_a_substring(backend: Backend) {
    let database = TestDatabase::new(backend);
    let catalog = database.open();
    // The key "ghijklm" is covered by "ghi", "jkl" and "klm".
    let apart = catalog.create(new_course("Curso ghi x jklm", 10), by()).await.expect("created");
    let reversed = catalog.create(new_course("Curso klm jkl ghi", 10), by()).await.expect("created");
    let holding = catalog.create(new_course("Curso wghijklm", 10), by()).await.expect("created");
    let quoted = catalog.create(new_course("Aula \"xy\"z\" w", 10), by()).await.expect("created");
    let store = database.open_store();
    let name = CatalogName::default_catalog();
    let search = |typed: &str| -> Vec<CourseId> {
        let key = TitleSearchKey::of_typed(typed).expect("a key");
        let mut found: Vec<CourseId> =
            store.search_active(&name, &key, 10).expect("search").iter().map(Course::id).collect();
        // PostgreSQL's third step has no order of its own.
        found.sort_by_key(ToString::to_string);
        found
    };
    let sorted = |mut ids: Vec<CourseId>| {
        ids.sort_by_key(ToString::to_string);
        ids
    };
    assert_eq!(
        search("ghijklm"),
        vec![holding.id()],
        "{:?} and {:?} hold the trigrams apart",
        apart.id(),
        reversed.id()
    );
    assert_eq!(search("jklm"), sorted(vec![apart.id(), holding.id()]));
    // Quotes and a key of exactly three characters reach the index as plain text.
    assert_eq!(search("\"xy\"z\""), vec![quoted.id()]);
    assert_eq!(search("y\"z"), vec![quoted.id()]);
    assert_eq!(search("ghi"), sorted(vec![apart.id(), reversed.id(), holding.id()]));
}
