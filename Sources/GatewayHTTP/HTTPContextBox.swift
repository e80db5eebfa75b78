// A handler's per-request context as the connections carry it.

/// A handler's `RequestContext` as the connections hold it without knowing its type (so that they are
/// not generic, and run specialized whatever the handler): boxed by the handler's typed calls
/// (`HTTPHandlerCalls`, `HTTPResponder`), which alone unbox it, always as the type they boxed.
/// The handler never sees the box: its context reaches it typed.
@usableFromInline
class HTTPContextBox: @unchecked Sendable {  // immutable (the subclass's `let value` is Sendable)
    @usableFromInline init() {}
}

/// The box of one context value of type `Context`.
@usableFromInline
final class HTTPTypedContextBox<Context: Sendable>: HTTPContextBox, @unchecked Sendable {  // immutable
    @usableFromInline let value: Context

    @inlinable init(_ value: Context) {
        self.value = value
        super.init()
    }

    /// The value of `box`, which its server's typed calls made as `HTTPTypedContextBox<Context>`.
    @inlinable static func unbox(_ box: HTTPContextBox) -> Context {
        unsafeDowncast(box, to: HTTPTypedContextBox<Context>.self).value
    }
}
