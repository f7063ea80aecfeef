/// The checks Realm makes of a model as a whole, after each class's own (O032, O056, O057): every problem goes
/// into one error, `Schema validation failed due to the following errors:` and a `- ` line each, in Realm's words.
/// Properties are named by their stored names, as Realm's core names them.
enum SchemaValidation {
    /// The problems of one type that need no other type: stored names used twice, aliases that are another
    /// property's name, sets of embedded objects.
    static func problems(of info: TypeInfo) -> [String] {
        let schema = info.schema
        var problems: [String] = []
        var seen: Set<String> = []
        var reported: Set<String> = []
        for p in schema.properties where !seen.insert(p.columnName).inserted && reported.insert(p.columnName).inserted {
            problems.append("Property '\(p.columnName)' appears more than once in the schema for type '\(schema.className)'.")
        }
        for p in schema.properties where p.name != p.columnName && schema.properties.contains(where: { $0.columnName == p.name }) {
            problems.append("Property '\(schema.className).\(p.columnName)' has an alias '\(p.name)' that conflicts with a property of the same name.")
        }
        for (i, p) in schema.properties.enumerated() where p.isSet {
            if let target = info.embeddedTargets[i] {
                problems.append(
                    "Set property '\(schema.className).\(p.columnName)' cannot contain embedded object type '\(target.className())'. "
                        + "Set semantics are not applicable to embedded objects.")
            }
        }
        return problems
    }

    /// For an embedded type: the path of a cycle of embedded types that comes back to it (`Type.link.link`),
    /// found as Realm's core finds it: breadth first along links to embedded types only (a link to a
    /// top-level type ends a path), each embedded type visited once per start; nil when there is none.
    /// `types` holds every type links may reach.
    static func embeddedCycle(from start: TypeInfo, in types: [String: TypeInfo]) -> String? {
        guard start.schema.isEmbedded else { return nil }
        var queue: [(info: TypeInfo, path: String)] = [(start, start.schema.className)]
        var seen: Set<String> = []
        var head = 0
        while head < queue.count {
            let (current, path) = queue[head]
            head += 1
            for (i, p) in current.schema.properties.enumerated() {
                guard current.linkTargets[i] != nil || (current.listTargets[i] ?? nil) != nil,
                      let name = p.objectClassName, let target = types[name], target.schema.isEmbedded,
                      !seen.contains(name) else { continue }
                let next = path + "." + p.columnName
                if name == start.schema.className { return next }
                queue.append((target, next))
                seen.insert(name)
            }
        }
        return nil
    }

    /// Every problem of the model `infos` (which holds each type links reach), as one error; nothing when it is
    /// valid.
    static func validate(_ infos: [TypeInfo]) throws {
        var problems: [String] = []
        var names: Set<String> = []
        for info in infos.sorted(by: { $0.schema.className < $1.schema.className }) where !names.insert(info.schema.className).inserted {
            problems.append("Type '\(info.schema.className)' appears more than once in the schema.")
        }
        for info in infos { problems += Self.problems(of: info) }
        // As in Realm, cycles are looked for only in an otherwise valid model.
        if problems.isEmpty {
            let byName = Dictionary(infos.map { ($0.schema.className, $0) }, uniquingKeysWith: { a, _ in a })
            for info in infos.sorted(by: { $0.schema.className < $1.schema.className }) {
                if let cycle = embeddedCycle(from: info, in: byName) {
                    problems.append("Cycles containing embedded objects are not currently supported: '\(cycle)'")
                }
            }
        }
        guard !problems.isEmpty else { return }
        throw Realm.Error(
            .schemaMismatch, "Schema validation failed due to the following errors:\n" + problems.map { "- " + $0 }.joined(separator: "\n"),
            suggestion: "Change the model classes named in each line; Realm.Configuration.objectTypes lists the classes of the schema.")
    }
}
