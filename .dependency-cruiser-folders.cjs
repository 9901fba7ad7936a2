// Folders import in one direction (README, "Layout"): no circle of folders, even through files that
// form no file circle. The second half of `npm run lint:deps` (.dependency-cruiser.cjs holds the
// other rules and the options this file reuses).
//
// The change record is no exception: src/changes/ (ChangeRecord, the Change union) sits below the
// resource folders, its payloads being the records of src/domain/; the subscribers and their wiring
// (src/change-subscribers/) sit above them.
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
      path: [base.options.exclude.path, '\\.spec\\.ts$'],
    },
  },
};
