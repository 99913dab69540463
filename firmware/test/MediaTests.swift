// Every case of media.json (AMS and CTS) through the codec on the device,
// both directions, and an AMS client and server in one session: set up,
// a title cut to the MTU read in full, a command performed.
import ANCS

struct MediaPDUVector {
    enum Kind {
        case remoteCommandWrite, remoteCommandList, registration, attributeSelection, entityUpdate
        case currentTime, localTimeInformation
    }
    let name: StaticString
    let kind: Kind
    let bytes: [UInt8]
    /// The numbers the bytes carry, in the JSON's order (Int.min: unknown).
    let fields: [Int]
    /// An Entity Update's value.
    let value: [UInt8]
    /// Local Time Information's text (`+01:00`).
    let text: StaticString
}

struct MediaErrorVector {
    let kind: MediaPDUVector.Kind
    let bytes: [UInt8]
    let error: StaticString
}

struct PlaybackInfoVector {
    let text: StaticString
    /// -1: not a PlaybackInfo.
    let state: Int
    let rateMilli: Int
    let elapsedMilli: Int
    let canonical: StaticString
}

struct FittingVector {
    let name: StaticString
    let mtu: Int
    let value: [UInt8]
    let bytes: [UInt8]
}

func runMediaVectors(_ log: inout Log) -> Int {
    print("AMS and CTS: \(mediaVectorCount) cases of media.json, through the codec both ways")
    var ran = 0
    for vector in mediaPDUVectors {
        let (fields, encoded) = decodeAndEncode(vector)
        log.check(fields == vector.fields && encoded == vector.bytes,
                  "\(vector.name.text): \(hex(vector.bytes)) decodes to its fields and encodes back")
        ran += 1
    }
    for vector in mediaErrorVectors {
        let text = mediaError(vector.kind, vector.bytes).map { $0.description } ?? "no error"
        log.check(sameText(text, vector.error.text), "\(hex(vector.bytes)): \(text)")
        ran += 1
    }
    for vector in playbackInfoVectors {
        let info = vector.text.withUTF8Buffer { PlaybackInfo(AttributeValue(bytes: Array($0))) }
        if vector.state < 0 {
            log.check(info == nil, "\"\(vector.text.text)\" is not a PlaybackInfo")
        } else {
            let read = info.map { [$0.state.rawValue, milli($0.rate), milli($0.elapsed)] }
            let written = info.map { sameText($0.value.string, vector.canonical.text) } ?? false
            log.check(read == [vector.state, vector.rateMilli, vector.elapsedMilli] && written,
                      "PlaybackInfo \"\(vector.text.text)\" read, and written \"\(vector.canonical.text)\"")
        }
        ran += 1
    }
    for vector in fittingVectors {
        let update = EntityUpdate.fitting(.title, AttributeValue(bytes: vector.value), mtu: vector.mtu)
        log.check(update.encode() == vector.bytes, "fitting: \(vector.name.text)")
        ran += 1
    }
    return ran
}

/// The vector's bytes decoded to numbers, and its fields encoded back.
private func decodeAndEncode(_ vector: MediaPDUVector) -> ([Int], [UInt8]) {
    let bytes = vector.bytes
    let f = vector.fields
    switch vector.kind {
    case .remoteCommandWrite:
        guard let command = try? RemoteCommandID.decode(write: bytes) else { return ([], []) }
        return ([Int(command.rawValue)], [UInt8(f[0])])
    case .remoteCommandList:
        let commands = RemoteCommandList.decode(bytes)
        return (commands.map { Int($0.rawValue) }, RemoteCommandList.encode(f.map { RemoteCommandID(rawValue: UInt8($0)) }))
    case .registration:
        guard let registration = try? EntityRegistration.decode(bytes) else { return ([], []) }
        let built = EntityRegistration(EntityID(rawValue: UInt8(f[0])), f.dropFirst().map { UInt8($0) })
        return ([Int(registration.entity.rawValue)] + registration.attributeIDs.map { Int($0) }, built.encode())
    case .attributeSelection:
        guard let attribute = try? MediaAttribute.decode(selection: bytes) else { return ([], []) }
        return ([Int(attribute.entity.rawValue), Int(attribute.attributeID)],
                MediaAttribute(EntityID(rawValue: UInt8(f[0])), UInt8(f[1])).encodeSelection())
    case .entityUpdate:
        guard let update = try? EntityUpdate.decode(bytes), update.value.bytes == vector.value else { return ([], []) }
        let built = EntityUpdate(MediaAttribute(EntityID(rawValue: UInt8(f[0])), UInt8(f[1])), AttributeValue(bytes: vector.value),
                                 flags: EntityUpdateFlags(rawValue: UInt8(f[2])))
        return ([Int(update.attribute.entity.rawValue), Int(update.attribute.attributeID), Int(update.flags.rawValue)], built.encode())
    case .currentTime:
        guard let time = try? CurrentTime.decode(bytes) else { return ([], []) }
        let built = CurrentTime(year: f[0], month: f[1], day: f[2], hour: f[3], minute: f[4], second: f[5],
                                dayOfWeek: f[6], fractions256: f[7], adjustReason: AdjustReason(rawValue: UInt8(f[8])))
        return ([time.year, time.month, time.day, time.hour, time.minute, time.second, time.dayOfWeek, time.fractions256,
                 Int(time.adjustReason.rawValue)], built.encode())
    case .localTimeInformation:
        guard let zone = try? LocalTimeInformation.decode(bytes), sameText(zone.description, vector.text.text) else { return ([], []) }
        let built = LocalTimeInformation(timeZone: Int8(f[0]), dstOffset: UInt8(f[1]))
        return ([Int(zone.timeZone), Int(zone.dstOffset), zone.utcOffsetMinutes ?? Int.min], built.encode())
    }
}

private func mediaError(_ kind: MediaPDUVector.Kind, _ bytes: [UInt8]) -> MediaDecodingError? {
    do throws(MediaDecodingError) {
        switch kind {
        case .remoteCommandWrite: _ = try RemoteCommandID.decode(write: bytes)
        case .registration: _ = try EntityRegistration.decode(bytes)
        case .attributeSelection: _ = try MediaAttribute.decode(selection: bytes)
        case .entityUpdate: _ = try EntityUpdate.decode(bytes)
        case .currentTime: _ = try CurrentTime.decode(bytes)
        case .localTimeInformation: _ = try LocalTimeInformation.decode(bytes)
        case .remoteCommandList: return nil
        }
    } catch {
        return error
    }
    return nil
}

/// An AMS client and server on one link at MTU 23: set up, a 40-byte title
/// cut and read in full, then Play performed.
func runMediaSession(_ log: inout Log) {
    print("AMS session: client and server at MTU 23")
    let title = "A title longer than one notification!!!"
    var server = AMSServer(player: MediaPlayer(tracks: [MediaTrack(artist: "Artist", title: title, duration: 200)]))
    var client = AMSClient()
    let link = ConnectionID(1)
    server.linkUp(link, mtu: 23)
    var pending = client.linkUp(at: .zero)
    var events: [AMSClientEvent] = []
    var operations = 0
    while !pending.isEmpty && operations < 100 {
        operations += 1
        let action = pending.removeFirst()
        var next: [AMSClientAction] = []
        switch action {
        case .emit(let event): events.append(event)
        case .subscribe(let characteristic):
            next += deliver(server.setSubscription(link, characteristic, enabled: true), to: &client)
            next += client.subscriptionCompleted(characteristic, .success, at: .zero)
        case .unsubscribe: break
        case .write(let characteristic, let bytes, let token):
            let answer = server.receivedWrite(link, characteristic, bytes, at: .zero)
            for case .respond(_, let result) in answer { next += client.writeCompleted(token, result, at: .zero) }
            next += deliver(answer, to: &client)
        case .read(let characteristic, let token):
            next += client.readCompleted(token, server.read(link, characteristic, at: .zero), at: .zero)
        }
        pending = next + pending
    }
    log.check(client.isReady && events.contains(.ready), "AMS set up: subscribed, three registrations")
    log.check(client.nowPlaying.title.map { sameText($0.string, title) } ?? false, "the cut title was read in full")
    let request = client.perform(.play, at: .zero)
    var completed = false
    for case .write(let characteristic, let bytes, let token) in request.actions {
        let answer = server.receivedWrite(link, characteristic, bytes, at: .zero)
        for case .respond(_, let result) in answer {
            for case .emit(.commandCompleted(let id, let error)) in client.writeCompleted(token, result, at: .zero) {
                completed = id == request.id && error == nil
            }
        }
        _ = deliver(answer, to: &client)
    }
    log.check(completed && client.nowPlaying.playback?.state == .playing, "Play performed: the player plays")
}

private func deliver(_ actions: [AMSServerAction], to client: inout AMSClient) -> [AMSClientAction] {
    var next: [AMSClientAction] = []
    for action in actions {
        switch action {
        case .notify(_, .remoteCommand, let bytes): next += client.received(remoteCommand: bytes, at: .zero)
        case .notify(_, .entityUpdate, let bytes): next += client.received(entityUpdate: bytes, at: .zero)
        default: break
        }
    }
    return next
}

/// Thousandths, rounded half away from zero (no libm on the device).
private func milli(_ value: Double) -> Int { Int(value * 1000 + (value < 0 ? -0.5 : 0.5)) }
