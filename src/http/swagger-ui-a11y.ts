import type { FastifyInstance } from 'fastify';
import { etagOf, noneMatchHits } from './etag.js';

/** Served beside Swagger UI's own files and named in its page (`customJs` of the swagger setup). */
export const SWAGGER_UI_SCRIPT_PATH = '/api/docs/atrium-a11y.js';

/**
 * What the project can fix in Swagger UI's page without patching it (axe-core, docs/openapi.md
 * "Accessibility of the developer pages"): the servers `<select>` has an empty `<label>` (critical: "Select element must
 * have an accessible name"), and the title, description and servers bar are outside every landmark ("All page content should be contained by landmarks") ("All page content
 * should be contained by landmarks"). Swagger UI's options offer neither, hence this script: a file,
 * as the page's policy allows no inline script. Swagger UI is React: it may render the select anew,
 * so the name is set again after every change of the page.
 */
const SCRIPT = `'use strict';
(function () {
  var REGIONS = [
    ['#swagger-ui .information-container', 'About this API'],
    ['#swagger-ui .schemes-server-container', 'Server and authorization']
  ];
  function fix() {
    // Swagger UI puts its operations in <main>, but not the document's title and description nor
    // the servers and Authorize bar above them: each becomes a named region (a landmark)
    REGIONS.forEach(function (entry) {
      var el = document.querySelector(entry[0]);
      if (el && el.getAttribute('role') !== 'region') {
        el.setAttribute('role', 'region');
        el.setAttribute('aria-label', entry[1]);
      }
    });
    var servers = document.getElementById('servers');
    if (servers && servers.getAttribute('aria-label') !== 'Server') { servers.setAttribute('aria-label', 'Server'); }
  }
  fix();
  new MutationObserver(fix).observe(document.body, { childList: true, subtree: true });
})();
`;

export function registerSwaggerUiScript(fastify: FastifyInstance): void {
  const body = Buffer.from(SCRIPT);
  const etag = etagOf(body);
  fastify.get(SWAGGER_UI_SCRIPT_PATH, (req, reply) => {
    void reply.header('ETag', etag).header('Cache-Control', 'no-cache');
    if (noneMatchHits(req.headers['if-none-match'], etag)) {
      return reply.code(304).send();
    }
    return reply.type('text/javascript; charset=utf-8').send(body);
  });
}
