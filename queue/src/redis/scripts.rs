//! The Lua scripts, loaded with `include_str!`, each with the shared prelude
//! in front. `redis::Script` runs them by EVALSHA and reloads them after a
//! Redis restart.

use redis::Script;

macro_rules! script {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("lua/prelude.lua"),
            "\n",
            include_str!(concat!("lua/", $file))
        ))
    };
}

/// Every queue script, hashed once at start.
pub struct Scripts {
    /// `join.lua`
    pub join: Script,
    /// `status.lua`
    pub status: Script,
    /// `leave.lua`
    pub leave: Script,
    /// `session.lua`
    pub session: Script,
    /// `tick.lua`
    pub tick: Script,
    /// `put_room.lua`
    pub put_room: Script,
    /// `set_state.lua`
    pub set_state: Script,
    /// `set_sale.lua`
    pub set_sale: Script,
    /// `figures.lua`
    pub figures: Script,
    /// `observe.lua`
    pub observe: Script,
    /// `draw.lua`
    pub draw: Script,
}

impl Scripts {
    /// Builds every script.
    pub fn new() -> Scripts {
        Scripts {
            join: script!("join.lua"),
            status: script!("status.lua"),
            leave: script!("leave.lua"),
            session: script!("session.lua"),
            tick: script!("tick.lua"),
            put_room: script!("put_room.lua"),
            set_state: script!("set_state.lua"),
            set_sale: script!("set_sale.lua"),
            figures: script!("figures.lua"),
            observe: script!("observe.lua"),
            draw: script!("draw.lua"),
        }
    }
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts::new()
    }
}
