//! Who may do what, and how a write is approved and recorded: the caller and its scope, the
//! operator's policy (pure rules; the file that carries them is `crate::policy_file`), the
//! user's confirmation of an archiving and the archiving itself, and the evidence every write
//! records. Below the live updates and the handler: nothing here imports them.

pub(crate) mod archive;
pub(crate) mod authority;
pub(crate) mod caller;
pub(crate) mod confirmation;
pub(crate) mod evidence;
pub(crate) mod policy;
pub(crate) mod refusals;
pub(crate) mod spent;
