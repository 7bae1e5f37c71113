//! The API keys: the [key](api_key) itself, its [name](key_name), the [keys file](keys_file) that
//! holds their hashes, the [generated key's file](generated_key) that keeps the hash of the key
//! generated when none is configured, and the [keyring](keyring) a running server authenticates with.

pub mod api_key;
pub mod generated_key;
pub mod key_name;
pub mod keyring;
pub mod keys_file;
