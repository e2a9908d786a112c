//! The native objects Java holds: each is a Rust value boxed by a native method and handed to Java
//! as its address (a `long` that a `dev.cuhandle.NativeObject` keeps), passed back to the native
//! methods that use it and finally to the one that releases it. In Rust such a `long` is a
//! [`Ptr<T>`], typed by what it points to, so that a native method cannot take one kind of object
//! for another, and every method borrows and releases objects through the same two calls.

use crate::core::completion::Marker;
use crate::core::error::Error;
use crate::core::event::Event;
use crate::core::graph::Graph;
use crate::core::handle::Handle;
use crate::core::host_registration::HostRegistration;
use crate::core::library::Library;
use crate::core::memory::device::DeviceMemory;
use crate::core::memory::pinned::PinnedMemory;
use crate::core::partition::Partition;
use crate::jni::throw::JniResult;
use jni::sys::{jint, jlong};
use std::marker::PhantomData;

/// A type whose values Java holds, and what Java calls one in messages.
pub trait Held: Send + Sync + 'static {
    const WHAT: &'static str;
}

macro_rules! held {
    ($($type:ty => $what:literal),* $(,)?) => {
        $(impl Held for $type {
            const WHAT: &'static str = $what;
        })*
    };
}

held! {
    Handle => "handle", DeviceMemory => "device buffer", PinnedMemory => "host buffer", Library => "library", Event => "event", Graph => "graph",
    Marker => "completion marker", HostRegistration => "host registration", Partition => "SM partition",
}

pub type HandlePtr = Ptr<Handle>;
pub type BufferPtr = Ptr<DeviceMemory>;
pub type PinnedPtr = Ptr<PinnedMemory>;
pub type LibraryPtr = Ptr<Library>;
pub type EventPtr = Ptr<Event>;
pub type GraphPtr = Ptr<Graph>;
pub type MarkerPtr = Ptr<Marker>;
pub type RegistrationPtr = Ptr<HostRegistration>;
pub type PartitionPtr = Ptr<Partition>;

/// The address of a `T` that Java holds, or 0 for none (a closed object).
///
/// The invariant every `Ptr` keeps: a non-zero address is one that [`Ptr::give`] made and that no
/// [`Ptr::take`] has reclaimed yet, and its object stays alive while the `Ptr` is used. Rust code
/// makes a `Ptr` only with `give`, or with [`Ptr::from_address`], whose caller promises the
/// invariant. The JVM makes the others, passing a `long` where a native method's entry in the
/// native table (`natives.rs`) says `Ptr<T>`: the Java side passes there only what a native
/// method returned as a `Ptr<T>` of the same `T`, keeps its object open (entered) for the whole
/// call, and passes an address to the releasing method once, after its last use
/// (`dev.cuhandle.NativeObject`). That Java side is what the table's contract rests on.
#[repr(transparent)]
pub struct Ptr<T: Held> {
    address: jlong,
    _points_to: PhantomData<fn() -> T>,
}

// A `Ptr` travels through JNI as a `long`.
const _: () = assert!(std::mem::size_of::<Ptr<Handle>>() == std::mem::size_of::<jlong>());
const _: () = assert!(std::mem::align_of::<Ptr<Handle>>() == std::mem::align_of::<jlong>());

impl<T: Held> Ptr<T> {
    /// Boxes `value` for Java to hold: Java owns it from now on, until it passes the address to a
    /// releasing method.
    pub fn give(value: T) -> Ptr<T> {
        Ptr { address: Box::into_raw(Box::new(value)) as jlong, _points_to: PhantomData }
    }

    /// The address, for Java to hold (inside an array of results): Java owns the object from now
    /// on, as with a `Ptr` returned by a native method.
    pub fn into_address(self) -> jlong {
        self.address
    }

    /// A `Ptr` for an address read from memory Java wrote (a list of the buffers a call uses).
    ///
    /// # Safety
    /// `address` is 0 or keeps the invariant of [`Ptr`] for the whole time the value is used.
    pub unsafe fn from_address(address: jlong) -> Ptr<T> {
        Ptr { address, _points_to: PhantomData }
    }

    /// The `count` pointers at `address`: a list the Java caller wrote into its direct buffer (at
    /// most `max`; none for address 0).
    ///
    /// # Safety
    /// A non-zero `address` points to at least `count` readable, 8-byte aligned `long`s that stay
    /// unchanged for `'a`, each of them 0 or keeping the invariant of [`Ptr`] for `'a`.
    pub unsafe fn list<'a>(address: jlong, count: jint, max: usize) -> JniResult<&'a [Ptr<T>]> {
        let count = usize::try_from(count)
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| Error::invalid_argument(format!("{count} native pointers passed; expected 0 to {max}")))?;
        if address == 0 || count == 0 {
            return Ok(&[]);
        }
        // SAFETY: the caller's contract; a `Ptr` has the layout of a `long` (repr(transparent)).
        Ok(unsafe { std::slice::from_raw_parts(address as *const Ptr<T>, count) })
    }

    /// The object, for the current call; a closed one (address 0) is an `IllegalStateException`.
    #[inline]
    pub fn get(&self) -> JniResult<&T> {
        self.optional().ok_or_else(|| Error::invalid_state(format!("the {} is closed", T::WHAT)).into())
    }

    /// The object of an optional argument, for the current call: `None` for address 0.
    #[inline]
    pub fn optional(&self) -> Option<&T> {
        // SAFETY: a non-zero address points to a live `T` made by `give` for at least as long as
        // `self` is used (the invariant of `Ptr`).
        (self.address != 0).then(|| unsafe { &*(self.address as *const T) })
    }

    /// Takes the object back from Java, which never passes this address again (its close), and
    /// drops it; nothing for address 0.
    pub fn release(self) -> JniResult<()> {
        self.release_with(drop)
    }

    /// As [`release`](Self::release), closing the object with `close`.
    pub fn release_with(self, close: impl FnOnce(T)) -> JniResult<()> {
        if let Some(object) = self.take() {
            close(*object);
        }
        Ok(())
    }

    fn take(self) -> Option<Box<T>> {
        // SAFETY: a non-zero address came from `Box::into_raw` in `give` and is reclaimed only
        // here, once (the invariant of `Ptr`).
        (self.address != 0).then(|| unsafe { Box::from_raw(self.address as *mut T) })
    }
}

/// No object: address 0, what a method returns to Java along with an exception.
impl<T: Held> Default for Ptr<T> {
    fn default() -> Self {
        Ptr { address: 0, _points_to: PhantomData }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jni::throw::Failure;

    struct Probe(u32);
    impl Held for Probe {
        const WHAT: &'static str = "probe";
    }

    #[test]
    fn a_given_object_is_borrowed_and_released_once() {
        let given = Ptr::give(Probe(7));
        // SAFETY: the address was just made by `give` and is released below, after these uses.
        let again = unsafe { Ptr::<Probe>::from_address(given.address) };
        assert_eq!(given.get().map(|p| p.0).ok(), Some(7));
        assert_eq!(again.optional().map(|p| p.0), Some(7));
        let mut closed = None;
        assert!(given.release_with(|probe| closed = Some(probe.0)).is_ok());
        assert_eq!(closed, Some(7));
    }

    #[test]
    fn a_list_java_wrote_reads_as_pointers_within_its_bound() {
        let (a, b) = (Ptr::give(Probe(1)), Ptr::give(Probe(2)));
        let addresses = [a.address, 0, b.address];
        // SAFETY: the list holds three longs that outlive its use: two live objects and a 0.
        let list = unsafe { Ptr::<Probe>::list(addresses.as_ptr() as jlong, 3, 8) }.expect("three pointers");
        assert_eq!(list.iter().map(|p| p.optional().map(|p| p.0)).collect::<Vec<_>>(), [Some(1), None, Some(2)]);
        // SAFETY: as above.
        assert!(unsafe { Ptr::<Probe>::list(addresses.as_ptr() as jlong, 9, 8) }.is_err(), "more than the most a call takes");
        // SAFETY: a null address lists nothing.
        assert!(unsafe { Ptr::<Probe>::list(0, 3, 8) }.is_ok_and(|l| l.is_empty()));
        assert!(a.release().is_ok() && b.release().is_ok());
    }

    #[test]
    fn a_closed_object_is_an_illegal_state_naming_it() {
        let closed = Ptr::<Probe>::default();
        match closed.get() {
            Err(Failure::Core(Error::InvalidState(m))) => assert_eq!(m, "the probe is closed"),
            _ => panic!("address 0 must be refused"),
        }
        assert!(closed.release_with(|_| panic!("nothing to close")).is_ok());
    }
}
