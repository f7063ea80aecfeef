import Dispatch
import Engine
import Foundation

extension TypeInfo {
    /// Property indices of the names in `keyPaths`; an unknown name traps, naming the type and the property.
    func indices(ofKeyPaths keyPaths: [String]) -> [Int] {
        keyPaths.map { path in
            let name = path.split(separator: ".").first.map(String.init) ?? path
            guard let i = propertyIndex[name] else {
                fatalError("Property '\(name)' not found in object of type '\(schema.className)'")
            }
            return i
        }
    }
}
