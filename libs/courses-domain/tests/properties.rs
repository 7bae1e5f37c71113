//! Property tests for the domain's parsers: every public `parse` takes any input without panicking,
//! accepts exactly what its type promises, and round-trips through its text form.
//!
//! Each property runs [`CASES`] generated cases (proptest's default, set explicitly so the figure
//! is stable). Failing cases are shrunk and recorded by proptest under `proptest-regressions/`.

use courses_domain::{
    CourseId, CourseIdError, CourseTitle, CourseTitleError, IdempotencyKey, IdempotencyKeyError, PageCursor,
    PageCursorError, WorkloadHours, WorkloadHoursError, comparison_key_of,
};
use proptest::prelude::*;
use proptest::sample::select;
use unicode_normalization::UnicodeNormalization as _;

/// Generated cases per property.
const CASES: u32 = 256;

/// Every character Rust's `char::is_whitespace` accepts (Unicode `White_Space`): what `trim` and
/// `split_whitespace` remove.
const WHITESPACE: &[char] = &[
    ' ', '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{85}', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2001}', '\u{2002}',
    '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}', '\u{200a}', '\u{2028}',
    '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}',
];

/// Any string, in three flavours: arbitrary Unicode (controls and surrogate-free planes alike),
/// printable Unicode, and text built from the characters the parsers treat specially.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\PC*",
        prop::collection::vec(
            prop_oneof![select(WHITESPACE), select(vec!['\0', '\u{1b}', '\u{7f}', '\u{9f}', '-', '0', 'a', 'É', '😀'])],
            0..40
        )
        .prop_map(|characters| characters.into_iter().collect()),
    ]
}

/// A character a title may hold anywhere: neither whitespace nor a control character nor one that
/// hides itself (what `CourseTitle::parse` accepts as a one-character title).
fn visible_char() -> impl Strategy<Value = char> {
    prop_oneof![
        any::<char>(),
        select(vec!['a', 'Z', 'ç', 'Ã', 'é', 'ß', 'Σ', 'ς', 'İ', 'ǅ', '中', '😀', '\u{301}', 'ﬁ', 'Ａ', 'ᴬ']),
    ]
    .prop_filter("visible", |character| CourseTitle::parse(&character.to_string()).is_ok())
}

/// Characters that show nothing or reorder what is shown (ADR 0025): a title holding one is refused.
const HIDDEN: &[char] = &[
    '\u{200B}',
    '\u{FEFF}',
    '\u{2060}',
    '\u{200E}',
    '\u{200F}',
    '\u{202A}',
    '\u{202B}',
    '\u{202C}',
    '\u{202D}',
    '\u{202E}',
    '\u{2066}',
    '\u{2067}',
    '\u{2068}',
    '\u{2069}',
    '\u{061C}',
    '\u{00AD}',
    '\u{034F}',
    '\u{3164}',
    '\u{115F}',
    '\u{FFA0}',
    '\u{2800}',
    '\u{180E}',
    '\u{E0001}',
    '\u{E0041}',
    '\u{FFF9}',
];

/// `count` visible characters.
fn visible_text(count: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(visible_char(), count).prop_map(|characters| characters.into_iter().collect())
}

/// A run of whitespace, possibly empty.
fn whitespace(count: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(select(WHITESPACE), count).prop_map(|characters| characters.into_iter().collect())
}

/// A control character that is not whitespace (so `trim` never removes it).
fn inner_control() -> impl Strategy<Value = char> {
    prop_oneof![0x00_u32..=0x08, 0x0e_u32..=0x1f, 0x7f_u32..=0x84, 0x86_u32..=0x9f]
        .prop_map(|code| char::from_u32(code).expect("a C0 or C1 control code point"))
}

/// Words of visible characters separated by whitespace runs, padded with whitespace: what a user types.
fn spaced_words() -> impl Strategy<Value = (Vec<String>, Vec<String>)> {
    prop::collection::vec(visible_text(1..=8), 1..6).prop_flat_map(|words| {
        let separators = prop::collection::vec(whitespace(1..4), words.len() + 1);
        (Just(words), separators)
    })
}

/// Joins `words` with `separators` (one before each word and one after the last, the outer ones may
/// be empty-trimmed by the caller).
fn interleave(words: &[String], separators: &[String]) -> String {
    let mut text = String::new();
    for (word, separator) in words.iter().zip(separators) {
        text.push_str(separator);
        text.push_str(word);
    }
    text.push_str(separators.last().map_or("", String::as_str));
    text
}

/// A UUID's 36-character hyphenated text, lowercase.
fn hyphenated(bytes: [u8; 16]) -> String {
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    // ---- CourseTitle -------------------------------------------------------------------------

    #[test]
    fn a_title_parse_of_any_text_either_keeps_the_trimmed_text_in_nfc_or_names_the_broken_rule(text in any_text()) {
        let trimmed = text.trim();
        let normalized: String = trimmed.nfc().collect();
        match CourseTitle::parse(&text) {
            Ok(title) => {
                prop_assert_eq!(title.as_str(), normalized.as_str());
                prop_assert!((1..=CourseTitle::MAX_CHARS).contains(&title.as_str().chars().count()));
                prop_assert!(!title.as_str().chars().any(char::is_control));
                prop_assert!(!title.as_str().chars().any(|character| HIDDEN.contains(&character)));
                prop_assert!(!title.as_str().contains(['\u{2028}', '\u{2029}']), "{:?}", title);
                prop_assert_eq!(title.to_string(), normalized);
            }
            Err(CourseTitleError::Empty) => prop_assert!(trimmed.is_empty()),
            Err(CourseTitleError::ControlCharacter { character }) => {
                prop_assert!(trimmed.contains(character));
                prop_assert!(character.is_control() || matches!(character, '\u{2028}' | '\u{2029}'), "{:?}", character);
            }
            Err(CourseTitleError::InvisibleCharacter { character }) => {
                prop_assert!(trimmed.contains(character));
                prop_assert!(!character.is_control() && !character.is_whitespace());
                prop_assert!(comparison_key_of(&character.to_string()).is_empty() || character == '\u{2800}'
                    || ('\u{FFF9}'..='\u{FFFB}').contains(&character), "{:?}", character);
            }
            Err(CourseTitleError::TooLong { chars }) => {
                prop_assert_eq!(chars, normalized.chars().count());
                prop_assert!(chars > CourseTitle::MAX_CHARS);
            }
        }
    }

    #[test]
    fn a_title_of_1_to_200_visible_characters_is_accepted_in_nfc_whatever_whitespace_surrounds_it(
        title_text in visible_text(1..=200),
        before in whitespace(0..5),
        after in whitespace(0..5),
    ) {
        let normalized: String = title_text.nfc().collect();
        let title = CourseTitle::parse(&format!("{before}{title_text}{after}"));
        if normalized.chars().count() <= CourseTitle::MAX_CHARS {
            prop_assert_eq!(title.as_ref().map(CourseTitle::as_str), Ok(normalized.as_str()));
        } else {
            // A few characters decompose under NFC (U+0958, ...): the limit counts the stored form.
            prop_assert_eq!(title, Err(CourseTitleError::TooLong { chars: normalized.chars().count() }));
        }
    }

    #[test]
    fn a_title_with_a_hidden_character_anywhere_is_refused_naming_that_character(
        start in visible_text(0..=20),
        hidden in select(HIDDEN),
        end in visible_text(0..=20),
    ) {
        prop_assert_eq!(
            CourseTitle::parse(&format!("{start}{hidden}{end}")),
            Err(CourseTitleError::InvisibleCharacter { character: hidden })
        );
    }

    #[test]
    fn canonically_equivalent_spellings_are_one_title_with_one_key(text in visible_text(1..=40)) {
        let composed: String = text.nfc().collect();
        let decomposed: String = text.nfd().collect();
        if let Ok(title) = CourseTitle::parse(&composed) {
            prop_assert_eq!(CourseTitle::parse(&decomposed), Ok(title.clone()));
            prop_assert_eq!(comparison_key_of(&decomposed), title.comparison_key());
        }
    }

    #[test]
    fn hidden_characters_slipped_into_a_title_do_not_change_its_comparison_key(
        text in visible_text(1..=40),
        slips in prop::collection::vec((any::<prop::sample::Index>(), select(HIDDEN)), 1..4),
    ) {
        let mut characters: Vec<char> = text.chars().collect();
        for (index, hidden) in slips {
            characters.insert(index.index(characters.len() + 1), hidden);
        }
        let slipped: String = characters.into_iter().collect();
        // U+2800 (Braille blank) and U+FFF9.. are refused but are not default-ignorable: they stay in the key.
        let shown: String = slipped.chars().filter(|character| !matches!(character, '\u{2800}' | '\u{FFF9}')).collect();
        let plain: String = text.chars().collect();
        prop_assert_eq!(comparison_key_of(&shown), comparison_key_of(&plain));
    }

    #[test]
    fn a_title_longer_than_200_characters_is_refused_with_its_length_in_characters_not_bytes(
        title_text in visible_text(201..=260),
    ) {
        // The limit counts the stored (NFC) form: a base and a combining mark may compose into one.
        let chars = title_text.nfc().count();
        if chars > CourseTitle::MAX_CHARS {
            prop_assert_eq!(CourseTitle::parse(&title_text), Err(CourseTitleError::TooLong { chars }));
        } else {
            prop_assert!(CourseTitle::parse(&title_text).is_ok());
        }
    }

    #[test]
    fn a_title_with_a_control_character_inside_is_refused(
        start in visible_text(1..=20),
        control in inner_control(),
        end in visible_text(0..=20),
    ) {
        prop_assert_eq!(
            CourseTitle::parse(&format!("{start}{control}{end}")),
            Err(CourseTitleError::ControlCharacter { character: control })
        );
    }

    #[test]
    fn a_parsed_title_parses_again_to_the_same_title(text in any_text()) {
        if let Ok(title) = CourseTitle::parse(&text) {
            prop_assert_eq!(CourseTitle::parse(title.as_str()), Ok(title.clone()));
            prop_assert_eq!(CourseTitle::parse(&title.to_string()), Ok(title));
        }
    }

    #[test]
    fn the_comparison_key_is_idempotent(text in any_text()) {
        let key = comparison_key_of(&text);
        prop_assert_eq!(comparison_key_of(&key), key.as_str());
        if let Ok(title) = CourseTitle::parse(&text) {
            prop_assert_eq!(title.comparison_key(), key);
        }
    }

    #[test]
    fn the_comparison_key_has_no_control_characters_and_no_outer_or_repeated_whitespace(text in any_text()) {
        let key = comparison_key_of(&text);
        prop_assert!(!key.chars().any(char::is_control), "{:?}", key);
        prop_assert_eq!(key.trim(), key.as_str());
        prop_assert!(!key.contains("  "), "{:?}", key);
        prop_assert!(key.chars().all(|character| character == ' ' || !character.is_whitespace()), "{:?}", key);
    }

    #[test]
    fn the_comparison_key_ignores_how_words_are_spaced((words, separators) in spaced_words(), other in spaced_words()) {
        let (_, other_separators) = other;
        let spaced = interleave(&words, &separators);
        let single_spaced = words.join(" ");
        prop_assert_eq!(comparison_key_of(&spaced), comparison_key_of(&single_spaced));
        // Other separators (as many as needed, reused cyclically) give the same key again.
        let respaced_separators: Vec<String> =
            (0..separators.len()).map(|index| other_separators[index % other_separators.len()].clone()).collect();
        prop_assert_eq!(comparison_key_of(&interleave(&words, &respaced_separators)), comparison_key_of(&spaced));
    }

    #[test]
    fn the_comparison_key_does_not_change_when_the_text_is_lowercased(text in any_text()) {
        prop_assert_eq!(comparison_key_of(&text.to_lowercase()), comparison_key_of(&text));
    }

    #[test]
    fn the_comparison_key_ignores_case_in_portuguese_titles(
        text in "[a-zA-Z0-9 áàâãéêíóôõúüçÁÀÂÃÉÊÍÓÔÕÚÜÇ.,:()-]{1,120}",
        flips in prop::collection::vec(any::<bool>(), 120),
    ) {
        let recased: String = text
            .chars()
            .zip(flips.iter().cycle())
            .flat_map(|(character, &upper)| {
                let mapped: Vec<char> =
                    if upper { character.to_uppercase().collect() } else { character.to_lowercase().collect() };
                mapped
            })
            .collect();
        prop_assert_eq!(comparison_key_of(&recased), comparison_key_of(&text));
        prop_assert_eq!(comparison_key_of(&text.to_uppercase()), comparison_key_of(&text));
    }

    // ---- WorkloadHours -----------------------------------------------------------------------

    #[test]
    fn a_workload_is_accepted_exactly_from_1_to_1000_hours(hours in prop_oneof![
        any::<i64>(),
        -5_i64..1010,
        select(vec![i64::MIN, i64::MAX, -1, 0, 1, 1000, 1001, 65_535, 65_536, 65_537, 4_294_967_297]),
    ]) {
        let parsed = WorkloadHours::parse(hours);
        if (1..=1000).contains(&hours) {
            let workload = parsed.expect("1..=1000 is accepted");
            prop_assert_eq!(i64::from(workload.get()), hours);
            prop_assert_eq!(workload.to_string(), hours.to_string());
            prop_assert!((WorkloadHours::MIN..=WorkloadHours::MAX).contains(&workload.get()));
        } else {
            prop_assert_eq!(parsed, Err(WorkloadHoursError { hours }));
        }
    }

    #[test]
    fn workloads_are_ordered_like_their_hours(first in 1_i64..=1000, second in 1_i64..=1000) {
        let (first_hours, second_hours) =
            (WorkloadHours::parse(first).expect("in range"), WorkloadHours::parse(second).expect("in range"));
        prop_assert_eq!(first_hours.cmp(&second_hours), first.cmp(&second));
    }

    // ---- CourseId ----------------------------------------------------------------------------

    #[test]
    fn an_id_round_trips_through_its_canonical_lowercase_text(bytes in any::<[u8; 16]>()) {
        let canonical = hyphenated(bytes);
        let id = CourseId::parse(&canonical).expect("a hyphenated UUID is an id");
        prop_assert_eq!(id.to_string(), canonical);
        prop_assert_eq!(id.as_uuid().as_bytes(), &bytes);
        prop_assert_eq!(CourseId::parse(&id.to_string()), Ok(id));
    }

    #[test]
    fn an_id_in_any_case_with_surrounding_whitespace_is_the_same_id_printed_lowercase(
        bytes in any::<[u8; 16]>(),
        flips in prop::collection::vec(any::<bool>(), 36),
        before in whitespace(0..4),
        after in whitespace(0..4),
    ) {
        let canonical = hyphenated(bytes);
        let recased: String = canonical
            .chars()
            .zip(&flips)
            .map(|(character, &upper)| if upper { character.to_ascii_uppercase() } else { character })
            .collect();
        let id = CourseId::parse(&format!("{before}{recased}{after}")).expect("the same id");
        prop_assert_eq!(id.to_string(), canonical);
    }

    #[test]
    fn any_text_is_either_refused_as_an_id_or_is_a_hyphenated_uuid_up_to_case_and_whitespace(text in any_text()) {
        if let Ok(id) = CourseId::parse(&text) {
            prop_assert_eq!(id.to_string(), text.trim().to_ascii_lowercase());
        }
    }

    #[test]
    fn a_hyphenated_uuid_with_one_character_changed_is_refused_unless_it_is_still_one_up_to_case(
        bytes in any::<[u8; 16]>(),
        index in 0_usize..36,
        edit in prop_oneof![
            Just(None),
            any::<char>().prop_map(Some),
            select(vec!['-', '0', 'f', 'F', 'g', 'G', '+', '{', ' ', '\u{0}', 'é', '٣', '０']).prop_map(Some),
        ],
        insert in any::<bool>(),
    ) {
        let mut characters: Vec<char> = hyphenated(bytes).chars().collect();
        match edit {
            None => {
                characters.remove(index);
            }
            Some(character) if insert => characters.insert(index, character),
            Some(character) => characters[index] = character,
        }
        let text: String = characters.into_iter().collect();
        match CourseId::parse(&text) {
            Ok(id) => prop_assert_eq!(id.to_string(), text.trim().to_ascii_lowercase()),
            Err(error) => prop_assert_eq!(error, CourseIdError),
        }
    }

    #[test]
    fn the_other_uuid_text_forms_are_refused(bytes in any::<[u8; 16]>()) {
        let canonical = hyphenated(bytes);
        let simple = canonical.replace('-', "");
        for text in [simple.clone(), format!("{{{canonical}}}"), format!("urn:uuid:{canonical}"), format!("0x{simple}")] {
            prop_assert_eq!(CourseId::parse(&text), Err(CourseIdError), "{:?}", text);
        }
    }

    // ---- PageCursor --------------------------------------------------------------------------

    // Store positions are SQLite rowids, 0..=i64::MAX; that is the range a cursor is made from.
    // (`after_position` takes a u64, but a token for a position above i64::MAX is refused by
    // `parse_token`: no store hands out such a position.)
    #[test]
    fn a_cursor_round_trips_through_its_token(position in prop_oneof![
        0_u64..=i64::MAX.unsigned_abs(),
        0_u64..1000,
        select(vec![0, 1, 9, 10, 99, 100, i64::MAX.unsigned_abs() - 1, i64::MAX.unsigned_abs()]),
    ]) {
        let cursor = PageCursor::after_position(position);
        let token = cursor.to_token();
        prop_assert!(!token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit()), "{:?}", token);
        prop_assert_eq!(PageCursor::parse_token(&token), Ok(cursor));
        prop_assert_eq!(cursor.position(), position);
    }

    #[test]
    fn a_cursor_token_is_either_refused_or_plain_decimal_digits_of_a_stored_position(token in prop_oneof![
        any_text(),
        "[0-9]{0,25}",
        "[-+ ]?[0-9]{1,20}[ .]?",
        any::<i128>().prop_map(|number| number.to_string()),
    ]) {
        match PageCursor::parse_token(&token) {
            Ok(cursor) => {
                prop_assert!(!token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit()), "{:?}", token);
                prop_assert_eq!(Ok(cursor.position()), token.parse::<u64>());
                prop_assert!(i64::try_from(cursor.position()).is_ok());
                // Only the canonical form is a token: no leading zeros.
                prop_assert_eq!(cursor.to_token(), token.clone());
            }
            Err(error) => {
                prop_assert_eq!(error, PageCursorError);
                let is_stored_position = !token.is_empty()
                    && token.bytes().all(|byte| byte.is_ascii_digit())
                    && (token == "0" || !token.starts_with('0'))
                    && token.parse::<i64>().is_ok()
                    && token.len() <= 19;
                prop_assert!(!is_stored_position, "{:?} names a stored position but was refused", token);
            }
        }
    }

    // ---- IdempotencyKey ----------------------------------------------------------------------

    #[test]
    fn an_idempotency_key_parse_of_any_text_either_keeps_the_trimmed_text_or_names_the_broken_rule(text in any_text()) {
        let trimmed = text.trim();
        match IdempotencyKey::parse(&text) {
            Ok(key) => {
                prop_assert_eq!(key.as_str(), trimmed);
                prop_assert!((1..=IdempotencyKey::MAX_CHARS).contains(&key.as_str().chars().count()));
                prop_assert!(!key.as_str().chars().any(char::is_control));
                prop_assert_eq!(IdempotencyKey::parse(key.as_str()), Ok(key.clone()));
                prop_assert_eq!(key.to_string(), trimmed);
            }
            Err(IdempotencyKeyError::Empty) => prop_assert!(trimmed.is_empty()),
            Err(IdempotencyKeyError::ControlCharacter) => prop_assert!(trimmed.chars().any(char::is_control)),
            Err(IdempotencyKeyError::TooLong) => {
                prop_assert!(trimmed.chars().count() > IdempotencyKey::MAX_CHARS);
            }
        }
    }

    #[test]
    fn an_idempotency_key_of_1_to_200_visible_characters_is_kept_as_written(
        key_text in visible_text(1..=200),
        before in whitespace(0..5),
        after in whitespace(0..5),
    ) {
        let key = IdempotencyKey::parse(&format!("{before}{key_text}{after}"));
        prop_assert_eq!(key.as_ref().map(IdempotencyKey::as_str), Ok(key_text.as_str()));
    }

    #[test]
    fn an_idempotency_key_that_is_too_long_or_holds_a_control_character_is_refused(
        long_key in visible_text(201..=260),
        start in visible_text(1..=20),
        control in inner_control(),
        end in visible_text(0..=20),
    ) {
        prop_assert_eq!(IdempotencyKey::parse(&long_key), Err(IdempotencyKeyError::TooLong));
        prop_assert_eq!(IdempotencyKey::parse(&format!("{start}{control}{end}")), Err(IdempotencyKeyError::ControlCharacter));
    }
}
