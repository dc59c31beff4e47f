//! A fake process environment for the settings tests of `gabp mod` and of the bridge-side commands.

use std::ffi::OsString;
use std::path::Path;

/// An environment with `vars` and a config home in `home` (so no real bridge.json is read).
pub(crate) fn env<'a>(
    home: &'a Path,
    vars: &'a [(&'a str, &'a str)],
) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |name| {
        if name == "XDG_CONFIG_HOME" || name == "HOME" {
            return Some(home.as_os_str().to_owned());
        }
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(*v))
    }
}
