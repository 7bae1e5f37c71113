//! [`Container`]: whether this process runs in a container, for the messages whose advice differs
//! there (issue 25): inside a container, `127.0.0.1` is the container itself, and a wildcard
//! `HOST` is the container's own interface, reached only through the ports the operator
//! published. A leaf: it imports nothing of this crate.

use std::path::Path;

/// The container engine this process runs under, as it marks its containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Podman (and other OCI engines that write `/run/.containerenv`).
    Podman,
    /// Docker (`/.dockerenv`).
    Docker,
}

impl Container {
    /// The container this process runs in, if any: `/run/.containerenv` (Podman) or
    /// `/.dockerenv` (Docker) exists.
    #[must_use]
    pub fn detect() -> Option<Self> {
        Self::detect_in(Path::new("/"))
    }

    /// [`Container::detect`] under `root` instead of `/` (tests).
    #[must_use]
    pub fn detect_in(root: &Path) -> Option<Self> {
        if root.join("run/.containerenv").exists() {
            Some(Self::Podman)
        } else if root.join(".dockerenv").exists() {
            Some(Self::Docker)
        } else {
            None
        }
    }

    /// The name this engine gives the machine the container runs on.
    #[must_use]
    pub fn host_machine_name(self) -> &'static str {
        match self {
            Self::Podman => "host.containers.internal",
            Self::Docker => "host.docker.internal",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_is_known_by_the_file_it_writes() {
        let root = tempfile::tempdir().expect("temp dir");
        assert_eq!(Container::detect_in(root.path()), None);
        std::fs::write(root.path().join(".dockerenv"), "").expect("file");
        assert_eq!(Container::detect_in(root.path()), Some(Container::Docker));
        std::fs::create_dir(root.path().join("run")).expect("folder");
        std::fs::write(root.path().join("run/.containerenv"), "").expect("file");
        assert_eq!(Container::detect_in(root.path()), Some(Container::Podman));
        assert_eq!(Container::Podman.host_machine_name(), "host.containers.internal");
    }
}
