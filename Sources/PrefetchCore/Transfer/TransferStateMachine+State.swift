import Foundation

/// A transfer's states and the data each one carries: what exists only in a state lives in
/// its case (the exchange in flight, the body being written, the bytes of a page dropped),
/// so no field means something in one state and nothing in the others. The machine keeps
/// its state private; these types are not private only so that they can live in a file of
/// their own.
extension TransferStateMachine {
    enum State: CustomStringConvertible {
        case queued
        /// The request is out; its response's head arrives.
        case connecting(Exchange)
        /// A 2xx body is written to the partial.
        case receiving(Exchange, Receiving)
        /// A body that is not written (no 2xx); `dropped`: its bytes taken so far.
        case discarding(Exchange, dropped: UInt64)
        /// A 200 to a revalidation that carries the cached copy itself (its strong ETag):
        /// its body is not read, and the copy is kept with these validators.
        case resendingCachedCopy(Validators, Reply)
        /// The partial holds the whole file: its digest is being taken.
        case verifying(Reply)
        /// The digest passed: the file is fsynced, then renamed into place.
        case syncing(Reply)
        case placed
        case fresh
        case paused(reason: String, Reply)
        case failed(TransferFailure, Reply)
        /// Only inside an event that changes a case's data in place (async-http-client's
        /// `.modifying`): the data is taken out, changed and put back, and is never copied
        /// because the state still holds it.
        case modifying

        /// The state's name, for the message of an event that cannot happen in it (its data
        /// may hold a response's headers: not printed).
        var description: String {
            switch self {
            case .queued: "queued"
            case .connecting: "connecting"
            case .receiving: "receiving"
            case .discarding: "discarding"
            case .resendingCachedCopy: "resendingCachedCopy"
            case .verifying: "verifying"
            case .syncing: "syncing"
            case .placed: "placed"
            case .fresh: "fresh"
            case .paused: "paused"
            case .failed: "failed"
            case .modifying: "modifying"
            }
        }
    }

    /// The exchange in flight (connecting, receiving, discarding): what its request asked and
    /// what the client holds (the rules' input), and its response's head as it arrives (a
    /// status line starts a new one).
    struct Exchange {
        let asked: ResponseRules.Request
        var head = ResponseRules.Head(status: 0)
        /// Whether the final head arrived whole (its blank line, a body, or a clean end): until
        /// then no response came (SPEC §6, §7), and later lines are a body's trailers.
        var headComplete = false

        var decodesBody: Bool { ResponseRules.decodes(asked, head) }
        var reply: Reply { Reply(status: head.status, headComplete: headComplete, decodesBody: decodesBody) }

        /// `ResponseRules.onHeadLine` on the head so far: the failure that stops the exchange,
        /// or nil (and a final head that ended is complete).
        mutating func judgeHead(ended: Bool) -> TransferFailure? {
            if let failure = ResponseRules.onHeadLine(head, ended: ended) { return failure }
            if ended, !(100..<200).contains(head.status) { headComplete = true }
            return nil
        }

        /// Takes a line of the head (a status line starts a new head: redirects,
        /// 100-continue): the failure that stops the exchange, or nil.
        mutating func take(line bytes: UnsafeRawBufferPointer) -> TransferFailure? {
            if headComplete {
                // Before any body, only another response can follow a whole head (a proxy's CONNECT
                // answer, should libcurl pass it on): a status line starts it; nothing else counts.
                guard bytes.starts(with: "HTTP/".utf8) else { return nil }
                headComplete = false
            }
            return judgeHead(ended: head.take(line: bytes))
        }

        /// How the exchange ended (`TransferStateMachine.ended`, whose words these are): libcurl's
        /// failure when no whole response came, else `ResponseRules.onEnd` on the response
        /// and the partial's bytes (`onDisk`).
        mutating func end(cleanly: Bool, tlsError: Bool, connectionFailure: String?, malformed: String?, describe: () -> String,
                          onDisk: UInt64, onWire: () -> UInt64, now: Date) -> ResponseRules.OnEnd {
            // libcurl finished the exchange, so its head was whole (a test may not say the blank line).
            if !headComplete, cleanly, head.status >= 200, let failure = judgeHead(ended: true) { return .failed(failure) }
            guard headComplete else {
                if let malformed { return .failed(.malformed(malformed, status: head.status)) }
                // No whole response came: the connection failed before one, or inside its head.
                return .failed(.noResponse(describe(), tls: tlsError, connectionFailure: connectionFailure))
            }
            return ResponseRules.onEnd(asked, head, onDisk: onDisk, onWire: decodesBody ? onWire() : nil, cleanly: cleanly, cut: describe(),
                                       now: now)
        }
    }

    /// What only a body being written keeps.
    struct Receiving {
        /// The last byte a 206 being appended may write (its Content-Range's end): nothing past
        /// it reaches the partial.
        let appendEnd: UInt64?
        /// `decodesBody`, fixed by the head (read for every chunk).
        let decodesBody: Bool
        /// Whether state.db holds the record of this body (its validators, this boot, this
        /// inode), and whether the engine took it to commit.
        var recordCommitted = false
        var recordRequested = false
        /// Why libcurl is stopped, if it is.
        var hold: Hold?
    }

    /// What is still read of the last response once the exchange no longer needs its head:
    /// its status (for failures), whether its head came whole (`originAnswered`, the answer
    /// to a trailer line), whether its body is decoded (its bytes on the wire are counted
    /// when the exchange ends).
    struct Reply {
        var status = 0
        var headComplete = false
        var decodesBody = false
    }
}

// What each state says when the machine is read.
extension TransferStateMachine.State {
    var phase: TransferStateMachine.Phase {
        switch self {
        case .queued: return .queued
        case .connecting: return .connecting
        case .receiving: return .receiving
        case .discarding, .resendingCachedCopy: return .discarding
        case .verifying: return .verifying
        case .syncing: return .syncing
        case .placed: return .placed
        case .fresh: return .fresh
        case .paused: return .paused
        case .failed: return .failed
        case .modifying: preconditionFailure("the phase read while \(self)")
        }
    }

    var failure: TransferFailure? { if case .failed(let failure, _) = self { failure } else { nil } }

    /// Whether the transfer has ended (placed, fresh, paused or failed).
    var isOver: Bool {
        switch self {
        case .placed, .fresh, .paused, .failed: true
        default: false
        }
    }

    /// The head as it arrives while connecting, whole while its body is read or dropped; in
    /// any other state, the last response's status only.
    var head: ResponseRules.Head {
        switch self {
        case .connecting(let exchange), .receiving(let exchange, _), .discarding(let exchange, _): return exchange.head
        default: return ResponseRules.Head(status: reply.status)
        }
    }

    var headComplete: Bool {
        switch self {
        case .connecting(let exchange), .receiving(let exchange, _), .discarding(let exchange, _): return exchange.headComplete
        default: return reply.headComplete
        }
    }

    var decodesBody: Bool {
        switch self {
        case .receiving(_, let receiving): return receiving.decodesBody
        case .connecting(let exchange), .discarding(let exchange, _): return exchange.decodesBody
        default: return reply.decodesBody
        }
    }

    /// What is still read of the last response, in any state.
    var reply: TransferStateMachine.Reply {
        switch self {
        case .queued: return TransferStateMachine.Reply()
        case .connecting(let exchange), .receiving(let exchange, _), .discarding(let exchange, _): return exchange.reply
        case .resendingCachedCopy(_, let reply), .verifying(let reply), .syncing(let reply), .paused(_, let reply), .failed(_, let reply):
            return reply
        case .placed, .fresh: return TransferStateMachine.Reply(headComplete: true)  // nothing reads their response's status
        case .modifying: preconditionFailure("the last response read while \(self)")
        }
    }

    /// The data of the body being written (nil in any other state).
    var receivingBody: TransferStateMachine.Receiving? { if case .receiving(_, let receiving) = self { receiving } else { nil } }

    /// Whether a body beginning now is the first of the response.
    var awaitsBody: Bool { if case .connecting = self { true } else { false } }

    /// Whether the final head came, valid, and not with a status that holds the origin.
    var originAnswered: Bool {
        guard headComplete else { return false }
        guard let failure else { return true }
        return failure.holdsOrigin == nil && !failure.invalidResponse
    }

    /// Bytes of a body that is not written taken so far (0 in any other state).
    var dropped: UInt64 { if case .discarding(_, let dropped) = self { dropped } else { 0 } }
}
