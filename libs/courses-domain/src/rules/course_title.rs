//! [`CourseTitle`]: a course's validated title, and the comparison key two titles are compared by
//! (ADR 0025).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization as _;

/// A course title: trimmed, in Unicode normalization form C (NFC), 1 to
/// [`CourseTitle::MAX_CHARS`] characters, with nothing that hides what it shows: no control
/// character or line separator, no invisible or bidirectional-control character (ADR 0025).
///
/// Two titles are the same title for the catalog's uniqueness rule when their
/// [`comparison_key`](CourseTitle::comparison_key)s are equal.
///
/// **Invariant:** the key a title carries is [`comparison_key_of`] its text, computed the first
/// time it is asked for and kept with the title (moves and clones take it along), so a title
/// whose key several steps need (an import's row: its id, the file's duplicates, the stored row)
/// folds its text once (ADR 0053). Equality, hashing and `Debug` are those of the text alone.
#[derive(Clone)]
pub struct CourseTitle {
    text: String,
    key: OnceLock<String>,
}

/// Why a text is not a [`CourseTitle`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CourseTitleError {
    /// Nothing is left after trimming whitespace.
    #[error("the title is empty")]
    Empty,
    /// Longer than [`CourseTitle::MAX_CHARS`] characters after trimming and normalization.
    #[error("the title has {chars} characters; the maximum is {max}", max = CourseTitle::MAX_CHARS)]
    TooLong {
        /// How many characters the trimmed, normalized title has.
        chars: usize,
    },
    /// Contains a control character (newline, tab, NUL, escape, ...) or a line or paragraph
    /// separator (U+2028, U+2029).
    #[error("the title contains a control character or line separator ({})", code_point(*character))]
    ControlCharacter {
        /// The first such character.
        character: char,
    },
    /// Contains a character that shows nothing or reorders what is shown: a zero-width or other
    /// default-ignorable character (U+200B, U+FEFF, U+2060, a soft hyphen, a Hangul filler, ...)
    /// or a bidirectional control (U+202E, U+2066, ...). Zero-width joiners and variation
    /// selectors are accepted where they join or select something (ADR 0025).
    #[error("the title contains an invisible or bidirectional-control character ({})", code_point(*character))]
    InvisibleCharacter {
        /// The first such character.
        character: char,
    },
}

/// The character's code point as Unicode writes it: `U+202E`.
#[must_use]
pub fn code_point(character: char) -> String {
    format!("U+{:04X}", u32::from(character))
}

/// The version of the comparison-key rule, stored with the keys (`title_key_rule`): a store whose
/// keys were computed by an older rule recomputes them when it opens (ADR 0025).
///
/// 1: trimmed, controls dropped, whitespace collapsed, lowercase.
/// 2: also default-ignorable characters dropped and NFKC normalization.
/// 3: full case folding instead of lowercase (`ß` is `ss`, `ς` is `σ`; issue 24).
pub(crate) const COMPARISON_KEY_RULE: i64 = 3;

impl CourseTitle {
    /// The longest title accepted, in characters (Unicode scalar values), after trimming and NFC.
    pub const MAX_CHARS: usize = 200;

    /// Trims the text, checks the title rules and normalizes it to NFC.
    ///
    /// # Errors
    /// [`CourseTitleError`] naming the rule the text breaks (and the first offending character).
    pub fn parse(text: &str) -> Result<Self, CourseTitleError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(CourseTitleError::Empty);
        }
        let characters: Vec<char> = trimmed.chars().collect();
        for (index, &character) in characters.iter().enumerate() {
            if is_control_or_line_separator(character) {
                return Err(CourseTitleError::ControlCharacter { character });
            }
            let before = index.checked_sub(1).map(|previous| characters[previous]);
            let after = characters.get(index + 1).copied();
            if is_hidden(character) && !is_accepted_in_context(character, before, after) {
                return Err(CourseTitleError::InvisibleCharacter { character });
            }
        }
        // Most titles already are NFC, and the quick check says so without normalizing.
        let normalized: String =
            if unicode_normalization::is_nfc_quick(trimmed.chars()) == unicode_normalization::IsNormalized::Yes {
                trimmed.to_owned()
            } else {
                trimmed.nfc().collect()
            };
        let chars = normalized.chars().count();
        if chars > Self::MAX_CHARS {
            return Err(CourseTitleError::TooLong { chars });
        }
        Ok(Self::of_text(normalized))
    }

    fn of_text(text: String) -> Self {
        Self { text, key: OnceLock::new() }
    }

    /// A title as a store holds it. Titles written under an earlier rule (before ADR 0025) may hold
    /// characters [`parse`](Self::parse) now refuses; they are read back as they were written, so
    /// that the catalog stays readable, and a rename replaces them by a title that passes today's
    /// rule.
    pub(crate) fn from_stored(text: String) -> Result<Self, CourseTitleError> {
        if text.trim().is_empty() {
            return Err(CourseTitleError::Empty);
        }
        Ok(Self::of_text(text))
    }

    /// The title as the user wrote it, trimmed and in NFC.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The key under which two active courses may not coexist ([`comparison_key_of`]): invisible
    /// characters dropped, NFKC, lowercase, inner whitespace collapsed to single spaces.
    /// `"Arquitetura   de Software"` and `"arquitetura de software"` have the same key, and so do
    /// `"Café"` composed and decomposed.
    #[must_use]
    pub fn comparison_key(&self) -> String {
        self.key().to_owned()
    }

    /// [`comparison_key`](Self::comparison_key), borrowed: computed once per title.
    pub(crate) fn key(&self) -> &str {
        self.key.get_or_init(|| comparison_key_of(&self.text))
    }
}

impl PartialEq for CourseTitle {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for CourseTitle {}

impl Hash for CourseTitle {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl fmt::Debug for CourseTitle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_tuple("CourseTitle").field(&self.text).finish()
    }
}

/// What a title search looks for: the comparison key ([`comparison_key_of`]) of what a user typed,
/// never empty, at most [`CourseTitle::MAX_CHARS`] characters.
///
/// **Invariant:** made only by `TitleSearchKey::of_typed` (crate-private), which refuses an empty key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleSearchKey(String);

impl TitleSearchKey {
    /// The key of what a user typed, `None` when nothing comparable is left (an empty or blank
    /// text, or only invisible characters).
    pub(crate) fn of_typed(typed: &str) -> Option<Self> {
        let key: String = comparison_key_of(typed).chars().take(CourseTitle::MAX_CHARS).collect();
        (!key.is_empty()).then_some(Self(key))
    }

    /// The key.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The comparison key of any text, as [`CourseTitle::comparison_key`] computes it for titles:
/// control and default-ignorable characters dropped (zero-width spaces and joiners, BOM, bidi
/// controls, variation selectors, ...), Unicode compatibility normalization (NFKC: `"ﬁ"` is
/// `"fi"`, a full-width `"Ａ"` is `"A"`, a no-break space is a space), lowercase, trimmed and inner
/// whitespace collapsed to single spaces.
/// Searches use it so that what a user types matches the way titles are compared.
#[must_use]
pub fn comparison_key_of(text: &str) -> String {
    latin_key_of(text).unwrap_or_else(|| unicode_key_of(text))
}

/// The comparison key of a text made only of ASCII and the Latin-1 letters U+00C0 to U+00FF (most
/// titles: Portuguese, English, Spanish, French), in one pass; `None` for any other text. Such a
/// text is already NFKC (none of these characters has a compatibility decomposition, and none
/// composes with another: all are starters), and so is its folding; full case folding maps
/// `A`–`Z` and U+00C0–U+00DE (but `×`) 0x20 up, `ß` to `ss`, and keeps the rest; the only
/// controls are ASCII's. So [`unicode_key_of`] reaches its fixpoint after one folding, and gives
/// what this gives (the tests compare both on every such character, every pair, and random
/// texts).
fn latin_key_of(text: &str) -> Option<String> {
    let mut key = String::with_capacity(text.len());
    let mut space_pending = false;
    for character in text.chars() {
        if !matches!(character, '\0'..='\u{7F}' | '\u{C0}'..='\u{FF}') {
            return None;
        }
        if character.is_whitespace() {
            space_pending = !key.is_empty();
            continue;
        }
        if character.is_control() {
            continue;
        }
        if space_pending {
            key.push(' ');
            space_pending = false;
        }
        match character {
            '\u{DF}' => key.push_str("ss"),
            'A'..='Z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{DE}' => {
                key.push(char::from_u32(u32::from(character) + 0x20).unwrap_or(character));
            }
            _ => key.push(character),
        }
    }
    Some(key)
}

/// [`comparison_key_of`] for any text, by the rule itself.
fn unicode_key_of(text: &str) -> String {
    let visible: String = text
        .chars()
        .filter(|&character| (!character.is_control() || character.is_whitespace()) && !is_default_ignorable(character))
        .collect();
    // NFKC and case folding do not commute (NFKC turns some caseless letters such as U+1D2C
    // into capitals): repeat until neither changes the text, so the key of a key is itself.
    // Full case folding, not lowercase: lowercase keeps `ß` and `ς`, so "Straße" and "STRASSE"
    // (or "ΟΔΟΣ" and "οδος") could both be active titles.
    let mut folded = nfkc(visible);
    for _ in 0..4 {
        let next = nfkc(caseless::default_case_fold_str(&folded));
        if next == folded {
            break;
        }
        folded = next;
    }
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` in NFKC; most titles already are, and the quick check says so without normalizing.
fn nfkc(text: String) -> String {
    if unicode_normalization::is_nfkc_quick(text.chars()) == unicode_normalization::IsNormalized::Yes {
        text
    } else {
        text.nfkc().collect()
    }
}

/// A character that breaks a title's line or controls a terminal: Unicode `Cc`, and the line and
/// paragraph separators.
fn is_control_or_line_separator(character: char) -> bool {
    character.is_control() || matches!(character, '\u{2028}' | '\u{2029}')
}

/// A character that shows nothing where it stands: default-ignorable (which includes the
/// bidirectional controls and the format characters that display nothing), the interlinear
/// annotation controls, and the Braille blank, which displays as a space but is not whitespace.
fn is_hidden(character: char) -> bool {
    is_default_ignorable(character) || matches!(character, '\u{FFF9}'..='\u{FFFB}' | '\u{2800}')
}

/// Zero-width joiners between two characters that show something (emoji sequences, Indic and
/// Persian scripts need them), and variation selectors right after such a character (`❤️`), are
/// part of what a title shows. Anywhere else they hide something.
fn is_accepted_in_context(character: char, before: Option<char>, after: Option<char>) -> bool {
    let shows_something = |neighbour: Option<char>| {
        neighbour.is_some_and(|neighbour| {
            !neighbour.is_whitespace() && !neighbour.is_control() && !is_joiner(neighbour) && !is_hidden(neighbour)
        })
    };
    let selector_or_shown =
        |neighbour: Option<char>| shows_something(neighbour) || neighbour.is_some_and(is_variation_selector);
    if is_joiner(character) {
        selector_or_shown(before) && shows_something(after)
    } else if is_variation_selector(character) {
        shows_something(before)
    } else {
        false
    }
}

fn is_joiner(character: char) -> bool {
    matches!(character, '\u{200C}' | '\u{200D}')
}

fn is_variation_selector(character: char) -> bool {
    matches!(character, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}

/// Unicode's `Default_Ignorable_Code_Point` property (DerivedCoreProperties.txt, Unicode 16; the
/// list has been stable since 6.3): characters a renderer shows as nothing when it does not
/// support them, and the bidirectional controls.
fn is_default_ignorable(character: char) -> bool {
    matches!(
        character,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// One stored course's title and key, as [`plan_rekey`] reads it.
#[derive(Debug, Clone)]
pub(crate) struct StoredKey {
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) key: String,
    pub(crate) active: bool,
}

/// What a store must change to bring its keys to [`COMPARISON_KEY_RULE`].
#[derive(Debug, Default)]
pub(crate) struct Rekey {
    /// `(id, new key)` of every course whose key changes.
    pub(crate) changes: Vec<(String, String)>,
    /// `(id, id of the earlier active course with the same new key)`: active courses that were
    /// distinct under the old rule and are duplicates under the new one.
    pub(crate) duplicates: Vec<(String, String)>,
}

/// The keys of stored courses under today's rule, given in creation order. An active course whose
/// new key an earlier active course already has keeps a key of its own (the new key, U+0001 and
/// its id: no title's key contains a control character, so no new title collides with it) and is
/// reported: both stay active and readable, new titles collide with the earlier one, and an
/// operator decides which to rename or archive (ADR 0025).
pub(crate) fn plan_rekey(stored: impl IntoIterator<Item = StoredKey>) -> Rekey {
    let mut holders: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut rekey = Rekey::default();
    for course in stored {
        let mut key = comparison_key_of(&course.title);
        if course.active {
            if let Some(holder) = holders.get(&key) {
                rekey.duplicates.push((course.id.clone(), holder.clone()));
                key = format!("{key}\u{1}{}", course.id);
            } else {
                holders.insert(key.clone(), course.id.clone());
            }
        }
        if key != course.key {
            rekey.changes.push((course.id, key));
        }
    }
    rekey
}

/// A key no other course holds, used while keys are swapped (so that a course taking a key
/// another course is about to give up never meets a unique-index violation).
pub(crate) fn transient_key(id: &str) -> String {
    format!("\u{1}\u{1}{id}")
}

impl fmt::Display for CourseTitle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_key_is_the_comparison_key_of_what_was_typed_and_never_empty() {
        assert_eq!(
            TitleSearchKey::of_typed(" Arquitetura   DE software ").map(|key| key.as_str().to_owned()),
            Some("arquitetura de software".to_owned())
        );
        for nothing in ["", "   ", "\u{200B}"] {
            assert_eq!(TitleSearchKey::of_typed(nothing), None, "{nothing:?}");
        }
        let long = TitleSearchKey::of_typed(&"a".repeat(500)).expect("a key");
        assert_eq!(long.as_str().chars().count(), CourseTitle::MAX_CHARS);
    }

    #[test]
    fn a_title_is_trimmed() {
        let title = CourseTitle::parse("  Arquitetura de Software \u{3000}").expect("valid title");
        assert_eq!(title.as_str(), "Arquitetura de Software");
    }

    #[test]
    fn an_empty_or_blank_title_is_refused() {
        assert_eq!(CourseTitle::parse(""), Err(CourseTitleError::Empty));
        assert_eq!(CourseTitle::parse(" \u{a0}  "), Err(CourseTitleError::Empty));
        assert_eq!(CourseTitle::parse("\u{2028}\u{2029} "), Err(CourseTitleError::Empty));
    }

    #[test]
    fn a_title_of_exactly_200_characters_is_accepted_and_201_is_refused() {
        let max = "é".repeat(200);
        assert_eq!(CourseTitle::parse(&max).map(|title| title.as_str().chars().count()), Ok(200));
        assert_eq!(CourseTitle::parse(&format!("{max}a")), Err(CourseTitleError::TooLong { chars: 201 }));
    }

    #[test]
    fn the_length_limit_counts_characters_after_trimming_and_composition() {
        let padded = format!("   {}   ", "a".repeat(200));
        assert!(CourseTitle::parse(&padded).is_ok());
        let decomposed = "e\u{301}".repeat(200);
        assert_eq!(CourseTitle::parse(&decomposed).map(|title| title.as_str().chars().count()), Ok(200));
    }

    #[test]
    fn a_title_with_a_control_character_or_a_line_separator_is_refused_naming_it() {
        for (text, character) in [
            ("Rust\nAvançado", '\n'),
            ("Rust\tAvançado", '\t'),
            ("Rust\u{0}", '\0'),
            ("Rust\u{1b}[31m", '\u{1b}'),
            ("Rust\u{7f}", '\u{7f}'),
            ("Rust\u{2028}Avançado", '\u{2028}'),
            ("Rust\u{2029}Avançado", '\u{2029}'),
        ] {
            assert_eq!(CourseTitle::parse(text), Err(CourseTitleError::ControlCharacter { character }), "{text:?}");
        }
    }

    #[test]
    fn a_title_with_an_invisible_or_direction_control_character_is_refused_naming_it() {
        for (text, character) in [
            ("\u{200B}", '\u{200B}'),
            ("\u{FEFF}", '\u{FEFF}'),
            ("\u{202E}", '\u{202E}'),
            ("Curso \u{202E}3pm.exe", '\u{202E}'),
            ("Caf\u{200B}é", '\u{200B}'),
            ("Café\u{FEFF}", '\u{FEFF}'),
            ("Caf\u{2060}é", '\u{2060}'),
            ("\u{2066}Rust\u{2069}", '\u{2066}'),
            ("Rust\u{200E}", '\u{200E}'),
            ("Ru\u{AD}st", '\u{AD}'),
            ("\u{3164}", '\u{3164}'),
            ("Rust \u{2800}", '\u{2800}'),
            ("\u{200D}Rust", '\u{200D}'),
            ("Rust \u{200D} Go", '\u{200D}'),
            ("\u{FE0F}Rust", '\u{FE0F}'),
            ("Rust\u{E0041}", '\u{E0041}'),
        ] {
            assert_eq!(CourseTitle::parse(text), Err(CourseTitleError::InvisibleCharacter { character }), "{text:?}");
        }
    }

    #[test]
    fn joiners_and_variation_selectors_that_join_or_select_something_are_accepted() {
        for text in
            ["Dev 👩\u{200D}💻", "Amo ❤\u{FE0F} Rust", "👁\u{FE0F}\u{200D}🗨\u{FE0F} Vigilância", "می\u{200C}خواهم"]
        {
            assert_eq!(CourseTitle::parse(text).map(|title| title.as_str().to_owned()), Ok(text.to_owned()));
        }
    }

    #[test]
    fn a_title_is_stored_in_nfc() {
        let title = CourseTitle::parse("Cafe\u{301}").expect("valid title");
        assert_eq!(title.as_str(), "Café");
        assert_eq!(title, CourseTitle::parse("Café").expect("valid title"));
    }

    #[test]
    fn every_spelling_of_cafe_that_displays_alike_has_one_comparison_key() {
        let key = CourseTitle::parse("Café").expect("valid title").comparison_key();
        for spelling in ["Cafe\u{301}", "CAFÉ", "Ｃａｆé", "café"] {
            assert_eq!(CourseTitle::parse(spelling).expect("valid title").comparison_key(), key, "{spelling:?}");
        }
        for hidden in ["Caf\u{200B}é", "Café\u{FEFF}", "Caf\u{2060}é", "\u{202E}Café"] {
            assert_eq!(comparison_key_of(hidden), key, "{hidden:?}");
        }
    }

    #[test]
    fn titles_differing_only_in_case_and_inner_whitespace_share_a_comparison_key() {
        let first = CourseTitle::parse("Arquitetura   de Software").expect("valid title");
        let second = CourseTitle::parse(" arquitetura de SOFTWARE").expect("valid title");
        assert_eq!(first.comparison_key(), second.comparison_key());
        assert_ne!(first, second, "the stored titles keep the user's spelling");
    }

    #[test]
    fn case_folding_covers_non_ascii_letters() {
        let first = CourseTitle::parse("INTRODUÇÃO À ÁLGEBRA").expect("valid title");
        let second = CourseTitle::parse("introdução à álgebra").expect("valid title");
        assert_eq!(first.comparison_key(), second.comparison_key());
    }

    #[test]
    fn full_case_folding_makes_sharp_s_and_final_sigma_one_title() {
        let key = |text| CourseTitle::parse(text).expect("valid title").comparison_key();
        assert_eq!(key("Straße"), key("STRASSE"));
        assert_eq!(key("straße"), key("strasse"));
        assert_eq!(key("Stra\u{1E9E}e"), key("strasse"), "capital sharp s");
        assert_eq!(key("ΟΔΟΣ"), key("οδος"));
        assert_eq!(key("οδοσ"), key("οδος"), "final and medial sigma");
        assert_ne!(key("Rust"), key("Rüst"), "folding is not accent stripping");
        // The key of a key is itself.
        for text in ["Straße", "ΟΔΟΣ", "ﬁ ǅ ᾈ"] {
            assert_eq!(comparison_key_of(&comparison_key_of(text)), comparison_key_of(text), "{text}");
        }
    }

    #[test]
    fn the_error_names_the_code_point() {
        let error = CourseTitle::parse("a\u{202E}b").expect_err("refused");
        assert!(error.to_string().contains("U+202E"), "{error}");
    }

    #[test]
    fn the_key_a_title_carries_is_the_key_of_its_text_before_and_after_a_clone() {
        let tricky = [
            "\u{1D2C}",
            "ᴬᴮ Rust",
            "Straße",
            "STRASSE",
            "ﬁlosoﬁa",
            "ΟΔΟΣ",
            "Cafe\u{301}",
            "Ｃａｆé",
            "ǅ ᾈ",
            "İstanbul",
        ];
        for text in tricky {
            let title = CourseTitle::parse(text).expect("valid title");
            let unasked = title.clone();
            assert_eq!(title.key(), comparison_key_of(title.as_str()), "{text:?}");
            assert_eq!(title.key(), unicode_key_of(title.as_str()), "{text:?}");
            assert_eq!(title.clone().key(), title.key(), "a clone takes the key along: {text:?}");
            assert_eq!(unasked.key(), title.key(), "{text:?}");
            assert_eq!(unasked, title, "equality is the text's, whether the key was asked for or not");
            assert_eq!(format!("{unasked:?}"), format!("CourseTitle({:?})", title.as_str()));
        }
        let stored = CourseTitle::from_stored("ᴬ".to_owned()).expect("a stored title");
        assert_eq!(stored.key(), comparison_key_of("ᴬ"));
    }

    /// The characters [`latin_key_of`] takes: ASCII and the Latin-1 letters.
    fn latin_characters() -> impl Iterator<Item = char> {
        ('\0'..='\u{7F}').chain('\u{C0}'..='\u{FF}')
    }

    #[test]
    fn the_latin_key_is_the_rule_s_key_for_every_latin_character_and_every_pair() {
        for first in latin_characters() {
            let single = first.to_string();
            assert_eq!(latin_key_of(&single), Some(unicode_key_of(&single)), "{first:?}");
            for second in latin_characters() {
                let pair = format!("{first}{second}");
                assert_eq!(latin_key_of(&pair), Some(unicode_key_of(&pair)), "{pair:?}");
            }
        }
    }

    #[test]
    fn a_text_with_any_other_character_takes_the_rule_s_own_path() {
        for other in ['\u{80}', '\u{85}', '\u{A0}', '\u{AA}', '\u{B5}', '\u{BF}', '\u{100}', '\u{301}', 'ﬁ', '\u{1D2C}']
        {
            assert_eq!(latin_key_of(&format!("Rust {other}")), None, "{other:?}");
        }
    }

    mod latin_properties {
        use proptest::prelude::*;
        use proptest::sample::select;

        use super::{comparison_key_of, latin_characters, latin_key_of, unicode_key_of};

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2048))]

            #[test]
            fn the_latin_key_is_the_rule_s_key_for_random_latin_texts(
                text in prop::collection::vec(
                    prop_oneof![
                        select(latin_characters().collect::<Vec<_>>()),
                        select(vec![' ', 'a', 'Z', 'ß', 'Ç', 'ã', '\t', '\u{B}', '\u{1}']),
                    ],
                    0..60,
                ).prop_map(|characters| characters.into_iter().collect::<String>())
            ) {
                prop_assert_eq!(latin_key_of(&text), Some(unicode_key_of(&text)));
            }

            #[test]
            fn the_comparison_key_is_the_rule_s_key_for_any_text(
                text in prop_oneof![any::<String>(), "[a-zA-Z \u{C0}-\u{FF}\u{A0}-\u{BF}\u{300}-\u{36F}ﬁᴬΣς]{0,40}"]
            ) {
                prop_assert_eq!(comparison_key_of(&text), unicode_key_of(&text));
            }
        }
    }

    fn stored(id: &str, title: &str, key: &str, active: bool) -> StoredKey {
        StoredKey { id: id.to_owned(), title: title.to_owned(), key: key.to_owned(), active }
    }

    #[test]
    fn rekeying_changes_only_the_keys_the_new_rule_computes_differently() {
        let rekey = plan_rekey([
            stored("1", "Rust", "rust", true),
            stored("2", "Cafe\u{301}", "cafe\u{301}", true),
            stored("3", "Caf\u{200B}é", "caf\u{200B}é", false),
        ]);
        assert_eq!(rekey.changes, [("2".to_owned(), "café".to_owned()), ("3".to_owned(), "café".to_owned())]);
        assert!(rekey.duplicates.is_empty(), "an archived course is no duplicate");
    }

    #[test]
    fn rekeying_keeps_the_earliest_active_course_on_a_shared_key_and_reports_the_later_ones() {
        let rekey = plan_rekey([
            stored("1", "Café", "café", true),
            stored("2", "Cafe\u{301}", "cafe\u{301}", true),
            stored("3", "Caf\u{FEFF}é", "caf\u{FEFF}é", true),
        ]);
        assert_eq!(
            rekey.changes,
            [("2".to_owned(), "café\u{1}2".to_owned()), ("3".to_owned(), "café\u{1}3".to_owned())]
        );
        assert_eq!(rekey.duplicates, [("2".to_owned(), "1".to_owned()), ("3".to_owned(), "1".to_owned())]);
    }
}
