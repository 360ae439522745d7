"""The SCons side of the tigris tools: everything that is not a tool entry point.

The tool modules in ``site_scons/site_tools/`` stay thin (``tigris``: variables, defaults, method
registrations; ``tigris_host``; ``tigris_cm55``) and reach each other through the environment
(``env.Tool``, ``env.TigrisHost``, ``env.TigrisPlanNeeds``). This package holds what they
declare, one concern a module, in the way SCons's own ``SCons/Tool/`` and PlatformIO's
``builder/tools`` split theirs:

* :mod:`.model`: ``env.TigrisModel``/``env.TigrisModels``, the graph of one model;
* :mod:`.fit`: ``env.TigrisFit``, the ladder at read time, the rows and the report at exit;
* :mod:`.nodes`: private and cross environments, the runtime library, the generated units, guards
  for missing tools;
* :mod:`.actions`: the function actions (read the inputs, call a pure ``tigris_scons`` module,
  write the outputs);
* :mod:`.state`: the one state object, kept in the environment;
* :mod:`.common`: signed settings, progress lines, console writes, the action wrapper.

Every decision a check makes lives in ``tigris_scons`` (no SCons import, unit-tested). Nothing here
imports the ``tigris`` name: inside SCons it is the tool module, not tigris-ml, so whatever needs
tigris-ml runs in a child process.
"""
