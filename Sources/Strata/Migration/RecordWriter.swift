import Engine

/// Encodes migrated objects of one type at its new version: the field list, defaults and layout plan worked out
/// once per type, one buffer for every record.
///
/// An object still viewing its old record (`DynamicState.view`) has every field it was not given copied from
/// that record's bytes where the slot is unchanged (same field, kind and nil-ness): a string the migration did
/// not touch is copied, not decoded into a `String` and encoded again.
struct RecordWriter {
    let fieldIds: [UInt32]
    let order: [Int]
    let defaults: [StoredValue]
    let layout: RecordLayout
    let plan: RecordLayout.EncodePlan?
    private var values: [StoredValue] = []
    private(set) var bytes: [UInt8] = []
    /// For the old layout last seen, per value index: the old field with the same slot (index into its fields),
    /// -1 when the old layout lacks the field, -2 when it has it in another slot (the value is decoded).
    private var sourcesLayout: RecordLayout?
    private var sources: [Int] = []
    /// `sources` for one object: -1 for the fields it was given.
    private var taken: [Int] = []

    init(_ t: StoredSchema.StoredType, defaults byName: [String: StoredValue]) {
        fieldIds = t.properties.map(\.fieldId)
        order = ObjectRecord.ascendingOrder(of: fieldIds)
        defaults = t.properties.map { byName[$0.name] ?? .null }
        layout = RecordLayout(t.properties)
        plan = layout.plan(order: order)
    }

    /// Encodes `state`'s record at `schemaVersion` into `bytes` (format 3 when its values fit).
    mutating func encode(_ state: DynamicState, schemaVersion: UInt64) {
        if let plan, let old = state.rowLayout, encodeViewing(state, old, plan, schemaVersion) { return }
        values.removeAll(keepingCapacity: true)
        for (i, id) in fieldIds.enumerated() { values.append(state.values[id] ?? defaults[i]) }
        let format2 = plan.map { layout.encode(schemaVersion: schemaVersion, StoredValues(values: values), plan: $0, into: &bytes) }
        if format2 != true {
            ObjectRecord.encode(schemaVersion: schemaVersion, fieldIds: fieldIds, values: values, order: order, into: &bytes)
        }
    }

    /// The format-3 record of an object viewing a record of layout `old`; false when a value does not fit its
    /// slot or the old record's places are damaged (the caller decodes every value then).
    private mutating func encodeViewing(_ state: DynamicState, _ old: RecordLayout, _ plan: RecordLayout.EncodePlan, _ schemaVersion: UInt64) -> Bool {
        if sourcesLayout != old {
            sources = fieldIds.map { id in
                guard let j = old.fields.firstIndex(where: { $0.id == id }) else { return -1 }
                let slot = layout.fields.first { $0.id == id }!
                return RecordLayout.sameSlot(slot, old.fields[j]) ? j : -2
            }
            sourcesLayout = old
        }
        // Overwritten in place, one slot per field: emptying and refilling the arrays cost more than the rest.
        // (`encode` fills `values` alone: each array is sized on its own.)
        if values.count != fieldIds.count { values = Array(repeating: .null, count: fieldIds.count) }
        if taken.count != fieldIds.count { taken = Array(repeating: -1, count: fieldIds.count) }
        for (i, id) in fieldIds.enumerated() {
            if let v = state.fields[id] {
                values[i] = v
                taken[i] = -1
            } else if sources[i] >= 0 {
                values[i] = .null
                taken[i] = sources[i]
            } else {
                values[i] = sources[i] == -2 ? state.field(id) ?? defaults[i] : defaults[i]
                taken[i] = -1
            }
        }
        let sources = taken
        return state.withRow { record, old, places in
            layout.encode(
                schemaVersion: schemaVersion, StoredValues(values: values), plan: plan,
                copying: .init(record: record, layout: old, places: places, sources: sources), into: &bytes)
        } ?? false
    }
}
