//! [`Policy`]: the tools and the prompt an operator switched off at runtime, globally or for one
//! catalog (tenant), and read-only mode (ADR 0036).
//!
//! The policy file is plain text, one rule a line, so that it can be edited by hand and diffed:
//!
//! ```text
//! # comentário (linhas em branco também são ignoradas)
//! somente-leitura                           # toda ferramenta que escreve, desativada
//! desativar ferramenta arquivar_curso
//! desativar prompt criar-curso
//! catalogo escola-a somente-leitura         # as mesmas regras, só para o catálogo escola-a
//! catalogo escola-a desativar ferramenta ler_curso
//! ```
//!
//! A name that is not one of this server's tools or prompts is an error (a typo must never leave
//! a tool on), as is any other line. The policy only ever removes: a tool it allows is still
//! subject to the caller's scope (ADR 0017).

use std::collections::{BTreeMap, BTreeSet};

/// Every tool this server registers, by its wire name.
pub const TOOLS: [&str; 8] = [
    "criar_curso",
    "atualizar_curso",
    "arquivar_curso",
    "listar_cursos",
    "ler_curso",
    "ver_catalogo",
    "interface_buscar_cursos",
    "interface_arquivar_curso",
];

/// The tools that change the catalog: what read-only mode switches off.
pub const WRITING_TOOLS: [&str; 4] = ["criar_curso", "atualizar_curso", "arquivar_curso", "interface_arquivar_curso"];

/// The app's tools that do what a model's tool does by another path (ADR 0039): switching the
/// model's tool off switches its twin off too, so the app is never a way around the policy.
pub const APP_TWINS: [(&str, &str); 1] = [("interface_arquivar_curso", "arquivar_curso")];

/// Every prompt this server registers.
pub const PROMPTS: [&str; 1] = ["criar-curso"];

/// What is switched off for one scope of the file (everyone, or one catalog).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Switches {
    read_only: bool,
    disabled_tools: BTreeSet<&'static str>,
    disabled_prompts: BTreeSet<&'static str>,
}

impl Switches {
    fn merge(&mut self, other: &Self) {
        self.read_only |= other.read_only;
        self.disabled_tools.extend(other.disabled_tools.iter().copied());
        self.disabled_prompts.extend(other.disabled_prompts.iter().copied());
    }
}

/// The operator's policy: global rules and rules per catalog. The default allows everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    global: Switches,
    catalogs: BTreeMap<String, Switches>,
}

/// The policy as it applies to the callers of one catalog: the global rules plus that catalog's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogPolicy {
    switches: Switches,
}

impl CatalogPolicy {
    /// Whether `tool` may be listed and called.
    #[must_use]
    pub fn allows_tool(&self, tool: &str) -> bool {
        let own =
            !(self.switches.disabled_tools.contains(tool) || self.switches.read_only && WRITING_TOOLS.contains(&tool));
        own && APP_TWINS.iter().filter(|(app_tool, _)| *app_tool == tool).all(|(_, twin)| self.allows_tool(twin))
    }

    /// Whether `prompt` may be listed and got.
    #[must_use]
    pub fn allows_prompt(&self, prompt: &str) -> bool {
        !self.switches.disabled_prompts.contains(prompt)
    }

    /// True in read-only mode (every writing tool off).
    #[must_use]
    pub const fn is_read_only(&self) -> bool {
        self.switches.read_only
    }

    /// The tools this policy allows, in registration order.
    #[must_use]
    pub fn allowed_tools(&self) -> Vec<&'static str> {
        TOOLS.into_iter().filter(|tool| self.allows_tool(tool)).collect()
    }

    /// The prompts this policy allows.
    #[must_use]
    pub fn allowed_prompts(&self) -> Vec<&'static str> {
        PROMPTS.into_iter().filter(|prompt| self.allows_prompt(prompt)).collect()
    }
}

/// What changed between two policies for some catalog: whom to tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ListsChanged {
    /// The tools allowed to some catalog changed.
    pub tools: bool,
    /// The prompts allowed to some catalog changed.
    pub prompts: bool,
}

impl Policy {
    /// Parses the policy file's text.
    ///
    /// # Errors
    /// [`PolicyError`] naming the first bad line (1-based) and what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, PolicyError> {
        let mut policy = Self::default();
        for (index, raw_line) in text.lines().enumerate() {
            let line_number = index + 1;
            let error = |kind| PolicyError { line: line_number, kind };
            let line = raw_line.split_once('#').map_or(raw_line, |(before, _)| before);
            let words: Vec<&str> = line.split_whitespace().collect();
            let (switches, rule) = match words.as_slice() {
                [] => continue,
                ["catalogo", name, rule @ ..] => {
                    let name = parse_catalog_name(name).map_err(error)?;
                    (policy.catalogs.entry(name).or_default(), rule)
                }
                ["catalogo"] => return Err(error(PolicyErrorKind::MissingCatalogName)),
                rule => (&mut policy.global, rule),
            };
            match rule {
                ["somente-leitura"] => switches.read_only = true,
                ["desativar", "ferramenta", name] => {
                    let tool =
                        known(&TOOLS, name).ok_or_else(|| error(PolicyErrorKind::UnknownTool((*name).to_owned())))?;
                    switches.disabled_tools.insert(tool);
                }
                ["desativar", "prompt", name] => {
                    let prompt = known(&PROMPTS, name)
                        .ok_or_else(|| error(PolicyErrorKind::UnknownPrompt((*name).to_owned())))?;
                    switches.disabled_prompts.insert(prompt);
                }
                _ => return Err(error(PolicyErrorKind::UnknownRule(rule.join(" ")))),
            }
        }
        Ok(policy)
    }

    /// The policy for the callers of `catalog`: the global rules plus that catalog's own.
    #[must_use]
    pub fn for_catalog(&self, catalog: &str) -> CatalogPolicy {
        let mut switches = self.global.clone();
        if let Some(own) = self.catalogs.get(catalog) {
            switches.merge(own);
        }
        CatalogPolicy { switches }
    }

    /// Whether the callers of `catalog` may list and call `tool`.
    #[must_use]
    pub fn allows_tool(&self, catalog: &str, tool: &str) -> bool {
        self.for_catalog(catalog).allows_tool(tool)
    }

    /// Whether the callers of `catalog` may list and get `prompt`.
    #[must_use]
    pub fn allows_prompt(&self, catalog: &str, prompt: &str) -> bool {
        self.for_catalog(catalog).allows_prompt(prompt)
    }

    /// Whether going from `self` to `next` changes the tools or the prompts the callers of
    /// `catalog` see: what to tell that catalog's listeners, and only them.
    #[must_use]
    pub fn lists_changed_for(&self, next: &Self, catalog: &str) -> ListsChanged {
        let (before, after) = (self.for_catalog(catalog), next.for_catalog(catalog));
        ListsChanged {
            tools: before.allowed_tools() != after.allowed_tools(),
            prompts: before.allowed_prompts() != after.allowed_prompts(),
        }
    }

    /// Whether going from `self` to `next` changes the tools or the prompts some catalog's callers
    /// see: the default catalog, and every catalog either policy names.
    #[must_use]
    pub fn lists_changed(&self, next: &Self) -> ListsChanged {
        let catalogs = std::iter::once(courses_domain::CatalogName::DEFAULT)
            .chain(self.catalogs.keys().map(String::as_str))
            .chain(next.catalogs.keys().map(String::as_str));
        let mut changed = ListsChanged::default();
        for catalog in catalogs {
            let ListsChanged { tools, prompts } = self.lists_changed_for(next, catalog);
            changed.tools |= tools;
            changed.prompts |= prompts;
        }
        changed
    }

    /// The catalogs the policy has rules for (`catalogo <nome>` lines).
    pub fn catalog_names(&self) -> impl Iterator<Item = &str> {
        self.catalogs.keys().map(String::as_str)
    }

    /// One line for the log: what is off, globally and per catalog.
    #[must_use]
    pub fn summary(&self) -> String {
        let describe = |switches: &Switches| {
            let mut parts = Vec::new();
            if switches.read_only {
                parts.push("somente-leitura".to_owned());
            }
            parts.extend(switches.disabled_tools.iter().map(|tool| format!("-{tool}")));
            parts.extend(switches.disabled_prompts.iter().map(|prompt| format!("-{prompt}")));
            if parts.is_empty() { "tudo ativo".to_owned() } else { parts.join(" ") }
        };
        let mut summary = format!("global: {}", describe(&self.global));
        for (catalog, switches) in &self.catalogs {
            summary.push_str(&format!("; {catalog}: {}", describe(switches)));
        }
        summary
    }
}

fn known(names: &[&'static str], name: &str) -> Option<&'static str> {
    names.iter().copied().find(|known| *known == name)
}

/// A catalog name as the keys file and `--catalog` take it (the domain's rule, ADR 0035): a name
/// no key can have would leave its rules silently unapplied.
fn parse_catalog_name(name: &str) -> Result<String, PolicyErrorKind> {
    courses_domain::CatalogName::parse(name)
        .map(|catalog| catalog.as_str().to_owned())
        .map_err(|_| PolicyErrorKind::InvalidCatalogName(name.to_owned()))
}

/// A line of the policy file that cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct PolicyError {
    /// The line (1-based).
    pub line: usize,
    /// What is wrong with it.
    pub kind: PolicyErrorKind,
}

/// What is wrong with a line of the policy file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyErrorKind {
    /// `desativar ferramenta` names no tool of this server.
    #[error("unknown tool {0:?}: the tools are {tools}", tools = TOOLS.join(", "))]
    UnknownTool(String),
    /// `desativar prompt` names no prompt of this server.
    #[error("unknown prompt {0:?}: the prompts are {prompts}", prompts = PROMPTS.join(", "))]
    UnknownPrompt(String),
    /// `catalogo` without a name.
    #[error("`catalogo` needs a catalog name and a rule")]
    MissingCatalogName,
    /// Not a catalog name (`courses_domain::CatalogName`): 1 to 64 of `a-z`, `0-9` and `-`, not
    /// starting with `-`.
    #[error("invalid catalog name {0:?}: use 1 to 64 of a-z, 0-9 and '-', starting with a letter or a digit")]
    InvalidCatalogName(String),
    /// Anything else.
    #[error(
        "unknown rule {0:?}: the rules are `somente-leitura`, `desativar ferramenta <nome>`, \
         `desativar prompt <nome>`, each optionally after `catalogo <nome>`"
    )]
    UnknownRule(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_or_one_of_comments_allows_everything() {
        for text in ["", "\n\n", "# nada desativado\n   # outro comentário\n"] {
            let policy = Policy::parse(text).expect("valid");
            assert_eq!(policy, Policy::default());
            assert_eq!(policy.for_catalog(courses_domain::CatalogName::DEFAULT).allowed_tools(), TOOLS);
            assert!(policy.allows_prompt(courses_domain::CatalogName::DEFAULT, "criar-curso"));
        }
    }

    #[test]
    fn read_only_mode_switches_off_every_writing_tool_and_nothing_else() {
        let policy = Policy::parse("somente-leitura\n").expect("valid");
        let catalog = policy.for_catalog(courses_domain::CatalogName::DEFAULT);
        assert!(catalog.is_read_only());
        assert_eq!(catalog.allowed_tools(), ["listar_cursos", "ler_curso", "ver_catalogo", "interface_buscar_cursos"]);
        assert!(catalog.allows_prompt("criar-curso"));
    }

    #[test]
    fn the_app_s_archiving_is_off_whenever_arquivar_curso_is() {
        let policy = Policy::parse("catalogo escola-a desativar ferramenta arquivar_curso\n").expect("valid");
        assert!(!policy.allows_tool("escola-a", "interface_arquivar_curso"));
        assert!(policy.allows_tool("escola-a", "ver_catalogo"));
        assert!(policy.allows_tool(courses_domain::CatalogName::DEFAULT, "interface_arquivar_curso"));
        let policy = Policy::parse("desativar ferramenta interface_arquivar_curso\n").expect("valid");
        assert!(!policy.allows_tool(courses_domain::CatalogName::DEFAULT, "interface_arquivar_curso"));
        assert!(
            policy.allows_tool(courses_domain::CatalogName::DEFAULT, "arquivar_curso"),
            "the twin rule goes one way"
        );
    }

    #[test]
    fn a_disabled_tool_or_prompt_is_off_for_every_catalog_when_global() {
        let policy =
            Policy::parse("desativar ferramenta arquivar_curso  # irreversível\ndesativar prompt criar-curso\n")
                .expect("valid");
        for catalog in [courses_domain::CatalogName::DEFAULT, "escola-a"] {
            assert!(!policy.allows_tool(catalog, "arquivar_curso"));
            assert!(policy.allows_tool(catalog, "criar_curso"));
            assert!(!policy.allows_prompt(catalog, "criar-curso"));
        }
    }

    #[test]
    fn a_catalog_rule_applies_to_that_catalog_only_and_adds_to_the_global_ones() {
        let text = "desativar ferramenta arquivar_curso\ncatalogo escola-a somente-leitura\n\
                    catalogo escola-b desativar prompt criar-curso\n";
        let policy = Policy::parse(text).expect("valid");
        assert_eq!(
            policy.for_catalog("escola-a").allowed_tools(),
            ["listar_cursos", "ler_curso", "ver_catalogo", "interface_buscar_cursos"]
        );
        assert!(policy.allows_prompt("escola-a", "criar-curso"));
        assert_eq!(
            policy.for_catalog("escola-b").allowed_tools(),
            ["criar_curso", "atualizar_curso", "listar_cursos", "ler_curso", "ver_catalogo", "interface_buscar_cursos"]
        );
        assert!(!policy.allows_prompt("escola-b", "criar-curso"));
        assert!(policy.allows_tool(courses_domain::CatalogName::DEFAULT, "criar_curso"));
        assert!(!policy.allows_tool(courses_domain::CatalogName::DEFAULT, "arquivar_curso"));
        assert!(policy.allows_prompt(courses_domain::CatalogName::DEFAULT, "criar-curso"));
    }

    #[test]
    fn a_misspelt_tool_or_prompt_is_an_error_naming_its_line() {
        let error = Policy::parse("somente-leitura\ndesativar ferramenta arquivar-curso\n").expect_err("typo");
        assert_eq!(error.line, 2);
        assert_eq!(error.kind, PolicyErrorKind::UnknownTool("arquivar-curso".to_owned()));
        assert!(error.to_string().contains("arquivar_curso"), "the message lists the real names: {error}");
        let error = Policy::parse("desativar prompt criar_curso").expect_err("a tool's name is not a prompt's");
        assert_eq!(error.kind, PolicyErrorKind::UnknownPrompt("criar_curso".to_owned()));
    }

    #[test]
    fn anything_but_the_rules_is_an_error() {
        for (text, kind) in [
            ("somente leitura", PolicyErrorKind::UnknownRule("somente leitura".to_owned())),
            ("desativar arquivar_curso", PolicyErrorKind::UnknownRule("desativar arquivar_curso".to_owned())),
            ("somente-leitura sim", PolicyErrorKind::UnknownRule("somente-leitura sim".to_owned())),
            ("catalogo", PolicyErrorKind::MissingCatalogName),
            ("catalogo escola-a", PolicyErrorKind::UnknownRule(String::new())),
            ("catalogo Escola somente-leitura", PolicyErrorKind::InvalidCatalogName("Escola".to_owned())),
            ("catalogo escola_a somente-leitura", PolicyErrorKind::InvalidCatalogName("escola_a".to_owned())),
        ] {
            assert_eq!(Policy::parse(text).expect_err(text).kind, kind, "{text}");
        }
        // The message names the characters a catalog name may have, and `_` is not one.
        let message = PolicyErrorKind::InvalidCatalogName("escola_a".to_owned()).to_string();
        assert!(message.contains("a-z, 0-9 and '-'"), "{message}");
        assert!(!message.replace("\"escola_a\"", "").contains('_'), "{message}");
    }

    #[test]
    fn lists_changed_says_which_lists_some_catalog_sees_differently() {
        let none = Policy::default();
        let read_only = Policy::parse("somente-leitura").expect("valid");
        let no_prompt = Policy::parse("catalogo escola-a desativar prompt criar-curso").expect("valid");
        assert_eq!(none.lists_changed(&none), ListsChanged::default());
        assert_eq!(none.lists_changed(&read_only), ListsChanged { tools: true, prompts: false });
        assert_eq!(read_only.lists_changed(&none), ListsChanged { tools: true, prompts: false });
        assert_eq!(none.lists_changed(&no_prompt), ListsChanged { tools: false, prompts: true });
        let same_effect = Policy::parse("somente-leitura\ndesativar ferramenta criar_curso").expect("valid");
        assert_eq!(read_only.lists_changed(&same_effect), ListsChanged::default(), "criar_curso was off already");
        assert_eq!(none.lists_changed_for(&no_prompt, "escola-a"), ListsChanged { tools: false, prompts: true });
        assert_eq!(none.lists_changed_for(&no_prompt, "escola-b"), ListsChanged::default(), "another catalog");
        assert_eq!(none.lists_changed_for(&read_only, "escola-b"), ListsChanged { tools: true, prompts: false });
    }
}
