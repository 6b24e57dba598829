"""App logs: the admin's viewer over ``app_logs`` (:mod:`.viewer`) and how long each category of
it is kept (:mod:`.retention`). Writers: :mod:`fable_core.admin.audit` (audit), the dispatcher's
:class:`~fable_core.tools.usage.UsageLog` (usage, error) and the web app's request log
(:mod:`fable_web.requestlog`)."""
