//! A handle's attachments: what higher layers keep per handle (BLAS's kernel functions and
//! reduction workspace, a graph capture in progress), held without knowing their types, so that
//! the handle sits below those layers and they reach their state without a lock or a lookup of
//! their own. At most one attachment of each type; the trait object type `A` (the handle's
//! `dyn Attachment`) says what a handle may do with them.

use crate::core::error::{Error, Result};
use std::any::Any;
use std::sync::{Mutex, OnceLock, PoisonError};

/// What the container needs of an attachment: to be told apart by its type.
pub trait AsAny {
    fn as_any(&self) -> &dyn Any;
}

/// The most kinds of attachment one handle holds.
const KINDS: usize = 4;

/// Attachments of trait object type `A`, at most one of each type, in the order they were made.
pub struct Attachments<A: ?Sized> {
    /// Filled from the front, each slot once: a lookup stops at the first empty one.
    slots: [OnceLock<Box<A>>; KINDS],
    /// Held while an attachment is made, so that two threads never make two of one type.
    adding: Mutex<()>,
}

impl<A: ?Sized> Default for Attachments<A> {
    fn default() -> Self {
        Attachments { slots: Default::default(), adding: Mutex::new(()) }
    }
}

impl<A: ?Sized + AsAny> Attachments<A> {
    /// The attachment of type `T`, if it was made.
    #[inline]
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.slots.iter().map_while(OnceLock::get).find_map(|a| a.as_any().downcast_ref::<T>())
    }

    /// The attachment of type `T`, made by `make` on first use (a failed `make` is retried by the
    /// next call). `make` returns it boxed as an `A` and must not attach anything itself.
    pub fn get_or_try_insert<T: Any>(&self, make: impl FnOnce() -> Result<Box<A>>) -> Result<&T> {
        if let Some(found) = self.get::<T>() {
            return Ok(found);
        }
        let _adding = self.adding.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = self.get::<T>() {
            return Ok(found);
        }
        let slot = self
            .slots
            .iter()
            .find(|slot| slot.get().is_none())
            .ok_or_else(|| Error::invalid_state(format!("a handle holds at most {KINDS} kinds of attachment")))?;
        // The slot is empty and stays so until this lock is released: the value goes into it.
        let _ = slot.set(make()?);
        slot.get()
            .and_then(|a| a.as_any().downcast_ref::<T>())
            .ok_or_else(|| Error::invalid_state("a handle attachment is not of the type it was made for"))
    }

    /// Every attachment made, as they were made.
    pub fn iter(&self) -> impl Iterator<Item = &A> {
        self.slots.iter().map_while(OnceLock::get).map(|a| &**a)
    }

    /// Takes every attachment out, as they were made.
    pub fn take_all(&mut self) -> Vec<Box<A>> {
        self.slots.iter_mut().map_while(OnceLock::take).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Named: Any {
        fn name(&self) -> &'static str;
    }
    impl AsAny for dyn Named {
        fn as_any(&self) -> &dyn Any {
            self
        }
    }
    struct Counter(u32);
    impl Named for Counter {
        fn name(&self) -> &'static str {
            "counter"
        }
    }
    struct Label(&'static str);
    impl Named for Label {
        fn name(&self) -> &'static str {
            "label"
        }
    }

    fn boxed<T: Named>(value: T) -> Result<Box<dyn Named>> {
        Ok(Box::new(value))
    }

    #[test]
    fn one_attachment_per_type_made_once_and_found_again() {
        let attachments = Attachments::<dyn Named>::default();
        assert!(attachments.get::<Counter>().is_none());
        assert_eq!(attachments.get_or_try_insert::<Counter>(|| boxed(Counter(1))).map(|c| c.0).ok(), Some(1));
        assert_eq!(attachments.get_or_try_insert::<Counter>(|| panic!("made twice")).map(|c| c.0).ok(), Some(1));
        assert_eq!(attachments.get_or_try_insert::<Label>(|| boxed(Label("graph"))).map(|l| l.0).ok(), Some("graph"));
        assert_eq!(attachments.get::<Counter>().map(|c| c.0), Some(1));
        assert_eq!(attachments.iter().map(|a| a.name()).collect::<Vec<_>>(), ["counter", "label"]);
    }

    #[test]
    fn a_failed_make_is_retried_and_take_all_empties_in_order() {
        let mut attachments = Attachments::<dyn Named>::default();
        assert!(attachments.get_or_try_insert::<Counter>(|| Err(Error::invalid_state("not yet"))).is_err());
        assert!(attachments.get::<Counter>().is_none());
        attachments.get_or_try_insert::<Label>(|| boxed(Label("first"))).expect("made");
        attachments.get_or_try_insert::<Counter>(|| boxed(Counter(7))).expect("made");
        let taken: Vec<_> = attachments.take_all().iter().map(|a| a.name()).collect();
        assert_eq!(taken, ["label", "counter"]);
        assert!(attachments.get::<Counter>().is_none() && attachments.iter().next().is_none());
    }

    #[test]
    fn a_made_value_of_another_type_is_refused_not_misread() {
        let attachments = Attachments::<dyn Named>::default();
        let wrong = attachments.get_or_try_insert::<Counter>(|| boxed(Label("not a counter")));
        assert!(wrong.is_err());
    }
}
