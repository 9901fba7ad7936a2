// ESLint rule `atrium/no-direct-side-effects` (eslint.config.js): writes record what changed on the
// change record (src/changes/, docs/data-integrity.md "The change record"); only its subscribers
// call the webhook outbox, the audit log's write side, the counters' `add` and the event bus's
// publish methods. Type-aware: a call is matched by the class of the object it is made on, whatever
// the property holding it is named.

/** Class name -> the methods only the change record's subscribers may call. */
const GUARDED = {
  WebhookOutbox: new Set(['enqueue']),
  AuditService: new Set(['record']),
  CountersRepository: new Set(['add']),
  EventsService: new Set(['userUpdated', 'messageSent']),
};

/** Classes a service has no reason to import at all (their read sides live elsewhere). */
const NOT_IN_SERVICES = new Set(['WebhookOutbox', 'AuditService']);

export const noDirectSideEffects = {
  meta: {
    type: 'problem',
    docs: { description: 'Side effects of a write come from the change record, not the service' },
    schema: [],
    messages: {
      call: '{{cls}}.{{method}} is the change record\'s to call: record the change (ChangeRecord.record) and let a subscriber derive this (docs/data-integrity.md, "The change record").',
      import:
        'A service does not import {{cls}}: it records its changes (ChangeRecord.record), whose subscribers write the outbox and the audit log.',
    },
  },
  create(context) {
    const services = context.sourceCode.parserServices;
    const isService = /\.service\.ts$/.test(context.filename);
    const visitors = {};
    if (isService) {
      visitors.ImportSpecifier = (node) => {
        const name = node.imported.type === 'Identifier' ? node.imported.name : undefined;
        if (
          name &&
          NOT_IN_SERVICES.has(name) &&
          node.importKind !== 'type' &&
          node.parent.importKind !== 'type'
        ) {
          context.report({ node, messageId: 'import', data: { cls: name } });
        }
      };
    }
    if (services?.program) {
      const checker = services.program.getTypeChecker();
      visitors['CallExpression > MemberExpression.callee'] = (node) => {
        if (node.property.type !== 'Identifier') {
          return;
        }
        const method = node.property.name;
        const type = checker.getTypeAtLocation(services.esTreeNodeToTSNodeMap.get(node.object));
        const cls = (type.getSymbol() ?? type.aliasSymbol)?.getName();
        if (cls && GUARDED[cls]?.has(method)) {
          context.report({ node, messageId: 'call', data: { cls, method } });
        }
      };
    }
    return visitors;
  },
};
