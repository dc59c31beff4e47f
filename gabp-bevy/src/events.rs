//! Bevy messages forwarded as GABP events (SPEC/1.0 gabp.md §7).

use bevy_app::{App, Last};
use bevy_ecs::message::{Message, MessageReader, Messages};
use bevy_ecs::prelude::*;
use serde::Serialize;

use crate::server::GabpServer;

/// Publishes each `M` written in the app on `channel`, in `Last`.
pub(crate) fn forward<M: Message + Serialize>(app: &mut App, channel: String) {
    if !app.world().contains_resource::<Messages<M>>() {
        app.add_message::<M>();
    }
    app.add_systems(
        Last,
        move |mut messages: MessageReader<'_, '_, M>, server: Option<Res<'_, GabpServer>>| {
            let Some(server) = server else {
                messages.clear();
                return;
            };
            for message in messages.read() {
                if let Err(e) = server.publish(&channel, message) {
                    tracing::warn!("gabp-bevy: {channel} was not published: {e}");
                }
            }
        },
    );
}
