// Folders import in one direction (README, "Layout"): no circle of folders, even through files that
// form no file circle. The second half of `npm run lint:deps` (.dependency-cruiser.cjs holds the
// other rules and the options this file reuses).
//
// One known exception, left out of this graph only (the other rules still read it): the change
// record, src/changes/. Its Change union (change.ts) names the domain types of the resources whose
// services record changes, and its subscribers (subscribers/, wired by changes.module.ts) import
// the resources' mappers, while those services import change-record.ts: src/changes and the
// resource folders import each other. Every other folder cycle fails. Removing the exception means
// moving the subscribers and their wiring out of src/changes and the union's payload shapes below
// the resources.
const base = require('./.dependency-cruiser.cjs');

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-folder-cycles',
      severity: 'error',
      comment:
        'No circle of folders (README, "Layout"): a lower layer that needs a higher one declares what it needs and the module wiring binds it.',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    ...base.options,
    exclude: {
      // unit specs are no layer: a spec may import whatever it tests
      path: [base.options.exclude.path, '\\.spec\\.ts$', '^src/changes/'],
    },
  },
};
