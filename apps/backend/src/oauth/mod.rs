//! The OAuth 2.1 resource server (ADR 0043): what turns an access token into a
//! [`Caller`](mcp_server::Caller), beside the keys.
//!
//! - [`config`]: the operator's OAuth settings, checked once at start (errors name the setting);
//! - [`authorization_server`]: the authorization server as this server knows it: its metadata
//!   (RFC 8414, or OpenID discovery), its JWKS cached by `kid` and refetched at a bounded rate,
//!   its state for `/ready`, kept up to date in the background;
//! - [`verifier`]: the [`ResourceServer`](verifier::ResourceServer): a JWT checked against the
//!   JWKS (a fixed list of asymmetric algorithms, `iss`, `aud`, `exp`/`nbf` with the leeway), an
//!   opaque token by introspection (RFC 7662, cached), then the token's scopes, catalog and
//!   subject made into a caller.
//!
//! **Invariant:** between `keys/` and `http/`: nothing here names axum, the HTTP layer, the
//! commands or the keys; a token's text is never logged nor put in an error (only the reason it
//! was refused, and who it names once it was accepted).

pub mod authorization_server;
pub mod config;
pub mod verifier;
