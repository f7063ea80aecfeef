#pragma once

/// Calls a Swift class's allocating initializer taken from its vtable, `function`, for the class whose
/// metadata is `metatype`: the metatype is passed in Swift's self register (the swiftcall convention's
/// context parameter: r13 on x86-64, x20 on arm64), as Swift itself calls an allocating initializer.
/// Returns the new instance, retained once (+1). Swift source cannot make this call: it reaches an
/// initializer through a metatype only when the initializer is `required`.
void *_Nonnull strata_call_allocating_initializer(const void *_Nonnull function, const void *_Nonnull metatype);
