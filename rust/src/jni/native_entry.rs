//! One entry of the native table (`natives.rs`): a Rust function registered as a static native
//! method of a Java class, its JNI signature derived from the function's types.

/// One entry of the native table: `native!(static raw fn name(args) -> result)` registers the function
/// `name` of the calling module as the Java method `name` in lowerCamelCase, with the JNI
/// signature of `args` and `result` in jni's signature syntax, where the native object pointers of
/// `native_ptr` are Java `long`s. The function receives the `EnvUnowned` and the class first and
/// runs its body through `throw::entry!` (panic-safe, errors thrown as Java exceptions).
macro_rules! native {
    ($($method:tt)*) => {
        ::jni::native_method! {
            jni = ::jni,
            type_map = {
                unsafe HandlePtr => long, unsafe BufferPtr => long, unsafe PinnedPtr => long, unsafe LibraryPtr => long,
                unsafe EventPtr => long, unsafe GraphPtr => long, unsafe MarkerPtr => long, unsafe RegistrationPtr => long,
                unsafe PartitionPtr => long,
            },
            // Checked once for the whole table when the library loads (`register`), not on
            // every call: each method is static.
            abi_check = UnsafeNever,
            $($method)*
        }
    };
}
pub(crate) use native;
