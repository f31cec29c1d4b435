"""Deploy what was decided (issue 29): a collection spec, phone-side clients, and the server's estimate.

* :mod:`ldpviz.deploy.spec` -- ``collection.json``: the versioned schema, its canonical digest, and the exact
  sampler tables each client follows (built from the mechanism's own parameters);
* ``client.js`` and :mod:`ldpviz.deploy.client` -- one true location in, one report out (no ldpviz needed);
* :mod:`ldpviz.deploy.estimate` -- reports back in: validated, counted, estimated with the mechanism's own
  server half, written as CSV / GeoJSON / PNG with per-cell intervals and the ledger;
* :mod:`ldpviz.deploy.bundle` -- everything an engineering team needs, in one folder or zip.
"""
