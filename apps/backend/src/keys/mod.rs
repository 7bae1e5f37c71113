//! The API keys: the [key](api_key) itself, its [name](key_name), the [keys file](keys_file) that
//! holds their hashes, and the [keyring](keyring) a running server authenticates with.

pub(crate) mod api_key;
pub(crate) mod key_name;
pub(crate) mod keyring;
pub(crate) mod keys_file;
