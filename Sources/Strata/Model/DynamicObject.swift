import Foundation

/// Dynamic access by name, for migrations and the dynamic API.
@dynamicMemberLookup
public final class DynamicObject: Object {
    public subscript(dynamicMember member: String) -> Any? {
        get { self[member] }
        set { self[member] = newValue }
    }
}
